"""What both programs of a server process run on, the gRPC services (services.grpc) and the dashboard
(services.web): the edge (one ledger, a bounded pool of worker threads, deadlines), who may call
what (auth, and streams that end when their token is revoked), logs, metrics, readiness, TLS, the
single-server lock on a SQLite file, page tokens, and the run feed (feed: a run's events read once
for all its followers, which WatchRun and the dashboard's server-sent events encode each their own
way). It imports neither program."""
