"""The optional extras the integrations and examples need (pyproject.toml's
[project.optional-dependencies]), and one clear error when one is missing after the minimal
install: which extra, and the command that installs it, instead of a bare ModuleNotFoundError.

    with extra("trl"):
        from transformers import TrainerCallback
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EXTRAS", "MissingExtra", "extra", "install_hint"]

# Each extra and the top-level modules it installs (a module missing means the extra is).
EXTRAS: dict[str, tuple[str, ...]] = {
    "trl": ("transformers", "trl", "peft", "accelerate", "datasets", "torch"),
    "tinker": ("tinker",),
    "mlx": ("mlx", "mlx_lm", "numpy"),
    "modal": ("modal",),
    "postgres": ("psycopg", "psycopg_pool"),
    "frames": ("pandas", "pyarrow"),
}


def install_hint(name: str) -> str:
    """The commands that install extra `name`: from a checkout, and from the package index."""
    return f"pip install -e '.[{name}]' (from a checkout) or pip install 'trainledger[{name}]'"


class MissingExtra(ModuleNotFoundError):
    """A module of an optional extra is not installed; the message says which extra, and how."""

    def __init__(self, name: str, module: str) -> None:
        super().__init__(
            f"this needs the '{name}' extra ({module} is not installed): {install_hint(name)}", name=module
        )
        self.extra = name


@contextmanager
def extra(name: str) -> Iterator[None]:
    """Imports in the block belong to extra `name`: a module of it missing is MissingExtra."""
    if name not in EXTRAS:
        raise ValueError(f"no extra {name!r}: one of {', '.join(sorted(EXTRAS))}")
    try:
        yield
    except MissingExtra:
        raise
    except ModuleNotFoundError as missing:
        module = (missing.name or "").partition(".")[0]
        if module not in EXTRAS[name]:
            raise
        raise MissingExtra(name, module) from missing
