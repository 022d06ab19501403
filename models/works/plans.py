"""Plans and billing (FR-12): which cadences a workspace's plan allows, and changing a workspace's plan.

A schedule billed ``subscription`` may use only its workspace plan's cadences (422
``cadence_not_in_plan`` otherwise); one billed ``usage`` may use any, and every generation
it runs writes a usage-ledger row (``work_usage``, never pruned). Plans are configuration,
``TICKWORK_PLANS_JSON`` (a JSON object: plan name -> list of cadences), by default:

| plan       | cadences                                                    |
|------------|-------------------------------------------------------------|
| `free`     | daily, weekly, monthly                                      |
| `pro`      | free's, every_12_hours, every_8_hours                       |
| `business` | all seven                                                   |

A workspace whose plan is not configured allows no cadence on subscription (usage still
works). Changing a workspace's plan (``tickwork workspace set-plan``) pauses each active
subscription schedule whose cadence the new plan no longer allows, and notifies; the
dispatcher does the same for a schedule it finds outside its plan (the configuration
changed under it).
"""

import json
from dataclasses import dataclass

from models.core.errors import InvalidInput
from models.timing.cadence import Cadence, CadenceError, parse_cadence
from models.works.tables import BillingMode

_FREE = ("daily", "weekly", "monthly")
_PRO = _FREE + ("every_12_hours", "every_8_hours")
DEFAULT_PLANS = {"free": list(_FREE), "pro": list(_PRO), "business": [c.value for c in Cadence]}


@dataclass(frozen=True)
class Plans:
    """Each plan's cadences."""

    cadences: dict[str, frozenset[Cadence]]

    def allowed(self, plan: str | None) -> frozenset[Cadence]:
        return self.cadences.get(plan or "", frozenset())

    def allows(self, plan: str | None, cadence: Cadence) -> bool:
        return cadence in self.allowed(plan)

    def refusal(self, plan: str | None, cadence: Cadence, billing_mode: str) -> str | None:
        """Why ``cadence`` may not run on ``plan`` under ``billing_mode``, or None when it may."""
        if billing_mode == BillingMode.USAGE.value or self.allows(plan, cadence):
            return None
        if plan not in self.cadences:
            return f"the workspace's plan {plan!r} is not configured (TICKWORK_PLANS_JSON); choose usage billing"
        allowed = ", ".join(c.value for c in Cadence if c in self.allowed(plan)) or "none"
        return f"{cadence.value} is not in the {plan} plan ({allowed}); choose usage billing to run it"

    def check(self, plan: str | None, cadence: Cadence, billing_mode: str) -> None:
        """A 422 ``cadence_not_in_plan`` naming the field, when :meth:`refusal` says no."""
        why = self.refusal(plan, cadence, billing_mode)
        if why:
            raise InvalidInput(why, field="cadence", code="cadence_not_in_plan")


def parse_plans(raw) -> Plans:
    """Plans from ``TICKWORK_PLANS_JSON`` text (or an already parsed mapping); ValueError naming what is wrong."""
    if raw is None or raw == "":
        raw = DEFAULT_PLANS
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"TICKWORK_PLANS_JSON is not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise ValueError("TICKWORK_PLANS_JSON must be a JSON object mapping plan names to lists of cadences")
    plans = {}
    for name, cadences in raw.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 32:
            raise ValueError(f"TICKWORK_PLANS_JSON: plan name {name!r} must be 1 to 32 characters")
        if not isinstance(cadences, list):
            raise ValueError(f"TICKWORK_PLANS_JSON: plan {name!r} must list its cadences")
        try:
            plans[name] = frozenset(parse_cadence(cadence) for cadence in cadences)
        except CadenceError as exc:
            raise ValueError(f"TICKWORK_PLANS_JSON: plan {name!r}: {exc}") from None
    return Plans(plans)


DEFAULT_PLANS_PARSED = parse_plans(DEFAULT_PLANS)
