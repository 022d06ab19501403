"""Who may change a post's time, written once: the calendar's drag and drop, its "Move to…"
control and the bulk reschedule ask here, and :func:`models.posts.operations.move_post`
enforces it.

| change                    | who may                                        |
|---------------------------|------------------------------------------------|
| move a post (drag, Move to…) | whoever composes posts (marketers, ops, admins; not reviewers) |
| set a channel's posting times (the queue's slots) | ops and admins                 |

Whether a *row* may be dragged is a rule about the row (its origin), not the person: see
:func:`models.overview.calendar.how_to_move`.
"""

from models.accounts.permissions import Permission, can, refusal
from models.accounts.tables import Role
from models.core.errors import Forbidden

# The permission that moves a post in time.
MOVES_POSTS = Permission.COMPOSE


def may_move_post(role: Role) -> bool:
    """Composing and scheduling posts is a marketer's job, so moving one is too."""
    return can(role, MOVES_POSTS)


def check_may_move_post(role: Role) -> None:
    """Forbidden unless :func:`may_move_post`."""
    if not may_move_post(role):
        raise Forbidden(refusal(MOVES_POSTS, "move a post"))


# The permission that changes a channel's posting times (the queue's slots).
SETS_POSTING_TIMES = Permission.OPERATE


def may_set_posting_times(role: Role) -> bool:
    """A channel's posting times shape every marketer's queue: an operator's or an admin's call."""
    return can(role, SETS_POSTING_TIMES)


def check_may_set_posting_times(role: Role) -> None:
    """Forbidden unless :func:`may_set_posting_times`."""
    if not may_set_posting_times(role):
        raise Forbidden(refusal(SETS_POSTING_TIMES, "change a channel's posting times"))
