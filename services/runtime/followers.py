"""How many live followers a server keeps, and how far each may fall behind: WatchRun's watchers
(services.grpc.watch) and the dashboard's server-sent event streams (services.web.live) share
these bounds."""

WATCHERS_MAX = 1_024
WATCHERS_PER_CALLER_MAX = 128
# How far one watcher may fall behind its run before it is dropped. Messages are shared by the
# watchers of a run, so a backlog holds references, and the bytes bound what they keep alive.
BACKLOG_MESSAGES_MAX = 64
BACKLOG_BYTES_MAX = 2 * 1024 * 1024
