"""What the works wing needs from the shell that calls it, built once per call site from the app.

Domain functions take an explicit session and ``now``; the rest (the policy, the plans, the
public address, the secret box, and how to hand a generation to the ``works`` queue or an
action to the clock) comes in one :class:`WorksContext`, so both shells and the tests drive
the wing the same way.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from models.core.policy import Policy
from models.core.secrets_box import SecretBox
from models.timing.clock import Clock
from models.works.plans import Plans


def _nothing(_items) -> None:
    return None


@dataclass(frozen=True)
class WorksContext:
    clock: Clock
    policy: Policy
    plans: Plans
    secret_box: SecretBox
    base_url: str | None = None  # TICKWORK_BASE_URL: callbacks and links need it
    engine: Engine | None = None
    # Called after commit with the ids of runs to generate (the works queue, or inline).
    hand_off: Callable[[list[int]], None] = field(default=_nothing)
    # Called after commit with scheduled actions a notification queued, so they go out at once.
    announce: Callable[[list], None] = field(default=_nothing)

    def callback_url(self, token: str) -> str | None:
        """Where an outside pipeline POSTs a run's result, or None without a public address."""
        if not self.base_url:
            return None
        return f"{self.base_url.rstrip('/')}/api/works/runs/{token}/callback"
