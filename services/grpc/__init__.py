"""The gRPC edge: the four services (Runs, Spend, Registry, Events), the proto <-> domain codec,
the error table, the interceptor every call passes through, and WatchRun's feeds. Composed with
the dashboard by services.server."""
