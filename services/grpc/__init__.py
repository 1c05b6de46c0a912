"""The gRPC services: the four services (Runs, Spend, Registry, Events), the proto <-> domain codec,
the error table, the interceptor every call passes through, and WatchRun's encoder of the run feed
(watch, over services.runtime.feed). Composed with the dashboard by services.server."""
