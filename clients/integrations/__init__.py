"""Trainer integrations, each behind its extra: transformers/TRL (`trl`), Tinker (`tinker`),
mlx-lm (`mlx`) and Modal (`modal`). Each imports only the client, never the ledger."""
