"""Offline trainer fixtures (tiny TRL/PEFT, mlx-lm) for the trainer integrations."""
