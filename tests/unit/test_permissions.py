"""The permission table: roles are not one rank, and a reviewer composes nothing."""

from models.accounts.permissions import PERMISSIONS, Permission, can
from models.accounts.tables import Role


def test_marketer_ops_and_admin_each_hold_what_the_one_before_holds():
    assert PERMISSIONS[Role.MARKETER] < PERMISSIONS[Role.OPS] < PERMISSIONS[Role.ADMIN]


def test_a_reviewer_reads_approves_reviews_and_comments_and_nothing_else():
    assert PERMISSIONS[Role.REVIEWER] == {Permission.READ, Permission.OWN_ACCOUNT, Permission.COMMENT,
                                          Permission.APPROVE, Permission.REVIEW}
    assert not can(Role.REVIEWER, Permission.COMPOSE)


def test_while_review_is_required_only_admins_and_reviewers_review():
    assert {role for role in Role if can(role, Permission.REVIEW)} == {Role.ADMIN, Role.REVIEWER}


def test_no_role_holds_nothing():
    assert not any(can(None, permission) for permission in Permission)
