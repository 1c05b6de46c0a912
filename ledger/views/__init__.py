"""The views: tables built from the log (schema, handlers), the projector that keeps them, the
queries that read them and the typed read models they answer with."""
