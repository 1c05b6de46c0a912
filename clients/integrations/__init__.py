"""Trainer integrations, each behind its extra: transformers/TRL (`trl`), Tinker (`tinker`),
mlx-lm (`mlx`) and Modal (`modal`). Each imports only the client, never the ledger.

What they share lives here once: the resume decision and its one refusal (resume: ResumeRefused
with a ResumeReason), the path trust it applies (paths), the GPU-time meter (meter) and price
sheets priced by the one cost rule of trainledger.pricing (pricing)."""
