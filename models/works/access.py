"""Who may change works and their schedules, written once: both shells ask here and the operations enforce it.

| change                                                              | who may          |
|---------------------------------------------------------------------|------------------|
| read works, runs, usage, the plugin registry; the schedule on the dashboard | every member     |
| create or delete a work; the four schedule endpoints (GET, PUT, DELETE, run); pause, resume; Run Now | ops and admins (the seed's "work edit rights") |
| where the workspace's notifications are sent                        | admins           |
"""

from models.accounts.permissions import Permission, can
from models.accounts.tables import Role
from models.core.errors import Forbidden


def may_edit_works(role: Role) -> bool:
    """Work edit rights: an operator's call (a marketer may read)."""
    return can(role, Permission.OPERATE)


def may_set_notifications(role: Role) -> bool:
    """Where notifications go is a workspace setting: the admin's."""
    return can(role, Permission.ADMINISTER)


def check_may_edit_works(role: Role) -> None:
    """Forbidden unless :func:`may_edit_works`."""
    if not may_edit_works(role):
        raise Forbidden("You need the ops role to change works and their schedules.")


def check_may_set_notifications(role: Role) -> None:
    """Forbidden unless :func:`may_set_notifications`."""
    if not may_set_notifications(role):
        raise Forbidden("You need the admin role to choose where notifications are sent.")
