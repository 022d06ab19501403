"""What both shells share at run time, built once per app: the clock, the policy, the secret box,
the wings' hooks, and the due-soon hand-off to the queue."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from flask import Flask, current_app

from models.core.hooks import Hooks
from models.core.policy import Policy
from models.core.secrets_box import SecretBox
from models.timing.clock import Clock


@dataclass
class Runtime:
    clock: Clock
    policy: Policy
    secret_box: SecretBox
    hooks: Hooks = field(default_factory=Hooks)
    # Called with each row a write made due before the next tick, so it can be handed to
    # the queue with an eta. The clock's shell (jobs/) installs the real one.
    on_due_soon: list[Callable] = field(default_factory=list)

    def now(self) -> datetime:
        return self.clock.now()

    def announce_due(self, rows) -> None:
        """Tell the clock's shell about rows that may fall due before the next tick."""
        horizon = self.policy.due_soon_horizon(self.now())
        due_soon = [row for row in rows if row.status == "queued" and row.due_at <= horizon]
        if due_soon:
            for hand_off in self.on_due_soon:
                hand_off(due_soon)


def init_app(app: Flask, *, clock: Clock, policy: Policy, secret_box: SecretBox, hooks: Hooks) -> None:
    app.extensions["tickwork"] = Runtime(clock=clock, policy=policy, secret_box=secret_box, hooks=hooks)


def runtime() -> Runtime:
    """The app's runtime (inside an app context)."""
    return current_app.extensions["tickwork"]
