"""The application: commands in, events and log positions out, reads from the views.

`Ledger` (ledger.application.ledger) is the one entry point; its methods are delegated to bounded
contexts, each given the writer and the reader (context):

- writes, by context: runs (open, attempts, finish, retract), run_records (steps, checkpoints,
  notes, reports, datasets), spend (accounts, holds, commits, charges), plans, registry, bills,
  tokens and leases; each command's arguments are one validated Struct (commands,
  spend_commands, registry_commands);
- the write kernel under them: writer (every decision runs here), gather (group commit), loading
  (the aggregates a decision loads, and recalls through the keys index), kernel (the eventsourcing
  Application), outcomes (Receipt and the refusals recorded for audit), snapshots;
- reads: reads (the reader over ledger.views.queries) and run_reads (a run's state, metrics,
  charts, checkpoints); gating (the scores a gate rule reads);
- integrity and keys_check: the hash chain and the keys index checked against the log (`verify`);
  naming: refusals that name a run's account by the run's name.
"""
