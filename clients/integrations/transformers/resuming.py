"""LedgerCallback's one-call resume helper, resume_checkpoint(): the run opened as the callback
opens it, its checkpoint to resume from picked and checked (clients.integrations.resume), and
held to the trainer's output directory, also when that is known only once the trainer is built."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from clients.integrations.resume import hold_to_root, latest
from clients.integrations.transformers.checkpoints import open_state, verified
from clients.integrations.transformers.plan import objective_from_args, planned_steps

if TYPE_CHECKING:
    from clients.client import LedgerClient

__all__ = ["ResumeHelper"]


class ResumeHelper:
    """resume_checkpoint() of LedgerCallback (which supplies the run's key, spec, name, cap,
    parent account, objective and reopen, its output directories and its client)."""

    if TYPE_CHECKING:
        run_key: str
        spec: dict[str, Any] | None
        name: str
        cap_usd_micro: int | None
        parent_account: str
        objective: tuple[str, str] | None
        reopen: bool
        output_dir: str | os.PathLike[str] | None
        _trainer_output_dir: str | None
        _unchecked: str | None

        def _get_client(self) -> LedgerClient: ...

    def resume_checkpoint(
        self,
        *,
        allow_restart: bool = False,
        verify_digest: bool = True,
        output_dir: str | os.PathLike[str] | None = None,
        args: Any = None,
    ) -> str | None:
        """resume_checkpoint() for this callback's run, opened as the callback opens it (with
        `args`, the TrainingArguments the trainer is built with, its objective and max_steps go
        with the open, so that a run this open creates has them from the start), held to
        `output_dir`, else the callback's, else the args.output_dir of the trainer it was given
        to. Asked before any of these is known (before Trainer(callbacks=[callback]) is built),
        it checks the rest now and holds the path to args.output_dir when the trainer is built:
        on_init_end (or on_train_begin, at the latest) raises ResumeRefused OUTSIDE_ROOT.
        `verify_digest=False` accepts a checkpoint recorded without a digest."""
        root = next((d for d in (output_dir, self.output_dir, self._trainer_output_dir) if d is not None), None)
        state = open_state(
            self._get_client(),
            key=self.run_key,
            spec=self.spec,
            name=self.name,
            cap_usd_micro=self.cap_usd_micro,
            parent_account=self.parent_account,
            objective=(objective_from_args(args) if args is not None else None) or self.objective,
            max_steps=planned_steps(args) if args is not None else None,
        )
        point = latest(state, reopen=self.reopen, allow_restart=allow_restart)
        self._unchecked = None
        if point is None:
            return None
        path = verified(
            point,
            state,
            output_dir=root,
            lora=(self.spec or {}).get("lora"),
            verify_digest=verify_digest,
            defer_root=True,
        )
        if root is None:
            self._unchecked = path
        return path

    def _hold_to_output_dir(self, args: Any) -> None:
        """Refuse the resume path handed out before the output directory was known unless it is
        under args.output_dir."""
        path, self._unchecked = self._unchecked, None
        output_dir = getattr(args, "output_dir", None)
        if path is None or output_dir is None:
            return
        hold_to_root(path, output_dir, root_name="trainer's output directory")
