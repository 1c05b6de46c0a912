"""The views: their tables (schema) and how each event changes them (handlers), the projector that
keeps them, the queries that read them (series pages in series) and the read models they answer
with (models)."""
