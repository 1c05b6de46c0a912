"""Fixtures for the trainer integrations: the client tests' in-process server and client."""

from tests.client.conftest import client, server  # noqa: F401  (fixtures)
