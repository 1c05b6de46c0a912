"""The provenance view: each run's objective, plan, retraction and progress anchors, its
checkpoints' scores and deletions, its datasets and the checkpoints registry versions were made
from; its tables (schema), how each event changes them (handlers) and the reads of plans,
progress, datasets, the best checkpoint and retention (reads)."""
