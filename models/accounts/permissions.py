"""What each role may do, written once as a table of named permissions.

Roles are not one rank: a reviewer reads what a marketer reads and may approve, request
changes and comment, but composes nothing. Every check in both shells and in the domain asks
:func:`can` for a named permission, never compares roles.

| permission   | marketer | ops | admin | reviewer | what it covers |
|--------------|:--------:|:---:|:-----:|:--------:|----------------|
| read         | ✓ | ✓ | ✓ | ✓ | the workspace's pages and the API's reads |
| own_account  | ✓ | ✓ | ✓ | ✓ | one's password, sessions, tokens, second factor, calendar feed, bell |
| comment      | ✓ | ✓ | ✓ | ✓ | the comment thread on a post |
| compose      | ✓ | ✓ | ✓ |   | posts, recurring rules, campaigns, contacts, media, imports; cancel what one made; submit for review |
| approve      | ✓ | ✓ | ✓ | ✓ | approve a post (while review is required, only with ``review`` too) |
| review       |   |   | ✓ | ✓ | approve while review is required, request changes, review links |
| operate      |   | ✓ | ✓ |   | cancel and reschedule any action, works, end rules, archive campaigns, alerts, health |
| administer   |   |   | ✓ |   | retry, channels, members, workspace settings, where notifications go |
"""

import enum

from models.accounts.tables import Role


class Permission(str, enum.Enum):
    """One thing a member may be allowed to do; the table above says who."""

    READ = "read"
    OWN_ACCOUNT = "own_account"
    COMMENT = "comment"
    COMPOSE = "compose"
    APPROVE = "approve"
    REVIEW = "review"
    OPERATE = "operate"
    ADMINISTER = "administer"


_EVERYONE = {Permission.READ, Permission.OWN_ACCOUNT, Permission.COMMENT, Permission.APPROVE}
_MARKETER = _EVERYONE | {Permission.COMPOSE}
_OPS = _MARKETER | {Permission.OPERATE}

PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.MARKETER: frozenset(_MARKETER),
    Role.OPS: frozenset(_OPS),
    Role.ADMIN: frozenset(_OPS | {Permission.REVIEW, Permission.ADMINISTER}),
    Role.REVIEWER: frozenset(_EVERYONE | {Permission.REVIEW}),
}

# The role a refusal names as the usual holder of a permission, so its message says what to ask for.
USUAL_ROLE: dict[Permission, str] = {
    Permission.READ: "marketer", Permission.OWN_ACCOUNT: "marketer", Permission.COMMENT: "marketer",
    Permission.COMPOSE: "marketer", Permission.APPROVE: "marketer", Permission.REVIEW: "reviewer",
    Permission.OPERATE: "ops", Permission.ADMINISTER: "admin",
}


def can(role: Role | str | None, permission: Permission) -> bool:
    """Whether ``role`` holds ``permission``; no role holds nothing."""
    if role is None:
        return False
    return permission in PERMISSIONS[Role(role)]


def refusal(permission: Permission, what: str) -> str:
    """The message of a refusal for lack of ``permission``: what was refused and which role may."""
    return f"You need the {USUAL_ROLE[permission]} role to {what}."
