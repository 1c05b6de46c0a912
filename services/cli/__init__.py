"""The `trainledger` command (services.cli.commands): serve, read and write through a server
(services.cli.remote, services.cli.registry) or on a database file (services.cli.local), and the
operator's commands (tokens, verify, seal, backup, restore, checkpoints, watch, bills)."""

from services.cli.commands import main, parser

__all__ = ["main", "parser"]
