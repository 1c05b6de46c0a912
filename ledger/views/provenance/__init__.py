"""The provenance view: runs' objectives, plans, progress, datasets and checkpoints' scores."""
