"""The views, sliced by view: each of runs, series (with the chart view), spend, bills, registry,
provenance and reports (one module, reports.py) holds its tables (schema), how each event changes
them (handlers) and its reads; search holds the run search language and its tables. Under them is
what they share: what they ask of the database (store: the ViewStore and cursor protocols, the
Query runner), how handlers are applied (handling) and the read models they answer with (models).
Above them: the whole schema (schema), the handlers of every view gathered (handlers), the
projector that keeps the views (projector), the scratch rebuild that checks them (scratch) and
ViewReader, which names every read (queries)."""
