"""The runs view: runs, attempts, checkpoints and the lease of each run's current attempt; its
tables (schema), how each Run event changes them (handlers, leases) and the reads of RunState,
lists of runs and checkpoints (reads)."""
