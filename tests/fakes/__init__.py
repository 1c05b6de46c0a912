"""Loopback fakes of external services (Tinker HTTP API) that the real SDKs talk to."""
