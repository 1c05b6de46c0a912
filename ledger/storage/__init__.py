"""Storage: the event recorders of SQLite and PostgreSQL, the keys index and the transcoder."""
