"""Loopback fakes of external services (Tinker's HTTP API, Modal's gRPC API) that the real SDKs talk to."""
