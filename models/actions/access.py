"""Who may change a scheduled action, written once: both shells ask here, and the operations in
:mod:`models.actions.scheduling` enforce it.

| change     | who may                                                                       |
|------------|-------------------------------------------------------------------------------|
| cancel     | ops and admins, any row; a marketer, the rows of posts, the rows they created themselves (origin ``person``) and the rows of the recurring rules they created |
| reschedule | ops and admins                                                                 |
| retry      | admins                                                                         |

A row minted from a post is steered through its post (the reconciler's rows answer a
reschedule with 409 ``follows_post``); that is a rule about the row, not the person, and
lives with the operation.
"""

from models.accounts.permissions import Permission, can
from models.accounts.tables import Role
from models.actions.tables import Origin, ScheduledAction
from models.core.errors import Forbidden


def may_cancel(role: Role, user_id: int | None, row: ScheduledAction) -> bool:
    """Ops cancel any row; a marketer cancels a post's rows, the rows they created themselves, and the
    occurrences of a recurring rule they created (the brief: "ops or the rule's creator").

    A row a wing minted while a marketer acted (a drip send minted as they enrolled someone)
    is the wing's, not theirs: only ``person`` rows, and a rule's rows (created as the rule's
    creator's), count as created by someone.
    """
    if can(role, Permission.OPERATE):
        return True
    return can(role, Permission.COMPOSE) and (row.origin == Origin.RECONCILER.value or (
        user_id is not None and row.origin in (Origin.PERSON.value, Origin.RECURRING.value)
        and row.created_by_id == user_id))


def may_reschedule(role: Role) -> bool:
    """Moving a row in time is an operator's call."""
    return can(role, Permission.OPERATE)


def may_retry(role: Role) -> bool:
    """Sending a failed row again is the admin's, as the playbook says."""
    return can(role, Permission.ADMINISTER)


def check_may_cancel(role: Role, user_id: int | None, row: ScheduledAction) -> None:
    """Forbidden unless :func:`may_cancel`."""
    if not may_cancel(role, user_id, row):
        raise Forbidden("You need the ops role to cancel an action you did not create.")


def check_may_reschedule(role: Role) -> None:
    """Forbidden unless :func:`may_reschedule`."""
    if not may_reschedule(role):
        raise Forbidden("You need the ops role to reschedule.")


def check_may_retry(role: Role) -> None:
    """Forbidden unless :func:`may_retry`."""
    if not may_retry(role):
        raise Forbidden("You need the admin role to retry.")
