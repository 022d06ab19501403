"""What the shells share at run time: the clock, the policy, the secret box, the dispatcher hook."""

from dataclasses import dataclass, field
from typing import Callable

from flask import Flask, current_app

from models.timing.clock import Clock
from models.core.policy import Policy
from models.core.secrets_box import SecretBox


@dataclass
class Runtime:
    clock: Clock
    policy: Policy
    secret_box: SecretBox
    # Called with each row a write made due before the next tick, so it can be handed to
    # the queue with an eta. The clock layer installs the real one.
    on_due_soon: list[Callable] = field(default_factory=list)

    def now(self):
        return self.clock.now()

    def announce_due(self, rows) -> None:
        """Tell the clock layer about rows that may fall due before the next tick."""
        horizon = self.policy.due_soon_horizon(self.now())
        due_soon = [row for row in rows if row.status == "queued" and row.due_at <= horizon]
        if due_soon:
            for hook in self.on_due_soon:
                hook(due_soon)


def init_app(app: Flask, *, clock: Clock, policy: Policy, secret_box: SecretBox) -> None:
    app.extensions["tickwork"] = Runtime(clock=clock, policy=policy, secret_box=secret_box)


def runtime() -> Runtime:
    return current_app.extensions["tickwork"]
