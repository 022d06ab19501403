"""Two-factor sign-in: a TOTP (RFC 6238) code from an authenticator app, or a one-time recovery code.

Optional for each person; an admin may require it of the workspace's admins
(``Workspace.admins_need_two_factor``): an admin without it may then only set it up.

| step | what |
|---|---|
| begin | a new secret, sealed in ``users.totp_secret``; not in force until confirmed |
| confirm | a code from the app proves it holds the secret; two-factor is on, ten recovery codes shown once |
| sign-in | after the password, a code (each time step once: a code seen is never taken again) or a recovery code (once) |
| off | with the password; the secret and the codes are dropped |
"""

import hashlib
import hmac
import secrets
from datetime import datetime

import pyotp
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from models.accounts.tables import Membership, RecoveryCode, Role, User, Workspace
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.secrets_box import SecretBox

ISSUER = "Tickwork"
STEP_SECONDS = 30
RECOVERY_CODES = 10
MAX_CODE = 40


def _user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound("no such person")
    return user


def _recovery_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def _normal(code) -> str:
    return "".join(str(code or "")[:MAX_CODE].split()).replace("-", "").lower()


def begin_setup(session: Session, user_id: int, *, box: SecretBox) -> str:
    """A new secret for the person (not yet in force); returns it, base32, for their app."""
    user = _user(session, user_id)
    if user.totp_enabled_at is not None:
        raise Conflict("two-factor sign-in is already on; turn it off first to set up another app",
                       code="two_factor_on")
    secret = pyotp.random_base32()
    user.totp_secret = box.seal(secret)
    session.flush()
    return secret


def provisioning_uri(secret: str, email: str) -> str:
    """The ``otpauth://`` address an authenticator app reads (typed in, or from a QR code of it)."""
    return pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)


def _matching_step(secret: str, code: str, now: datetime, after: int | None) -> int | None:
    """The time step (now, one before or one after) whose code is ``code``, if later than ``after``."""
    if not code.isdigit() or len(code) != 6:
        return None
    totp = pyotp.TOTP(secret)
    current = int(now.timestamp()) // STEP_SECONDS
    for step in (current - 1, current, current + 1):
        if (after is None or step > after) and hmac.compare_digest(totp.at(step * STEP_SECONDS), code):
            return step
    return None


def _new_recovery_codes(session: Session, user_id: int, now: datetime) -> list[str]:
    session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = secrets.token_hex(5)  # 40 bits, ten hex digits, shown as two groups
        codes.append(f"{raw[:5]}-{raw[5:]}")
        session.add(RecoveryCode(user_id=user_id, code_hash=_recovery_hash(raw), created_at=now))
    session.flush()
    return codes


def confirm_setup(session: Session, user_id: int, code: str, *, box: SecretBox, now: datetime) -> list[str]:
    """Turn two-factor on once a code from the app matches; returns the recovery codes (shown once)."""
    user = _user(session, user_id)
    if user.totp_enabled_at is not None:
        raise Conflict("two-factor sign-in is already on", code="two_factor_on")
    if user.totp_secret is None:
        raise Conflict("begin the set-up first", code="two_factor_not_begun")
    step = _matching_step(box.open(user.totp_secret), _normal(code), now, None)
    if step is None:
        raise InvalidInput("that code does not match; type the six digits your app shows now", field="code")
    user.totp_enabled_at, user.totp_last_step = now, step
    return _new_recovery_codes(session, user_id, now)


def check_second_factor(session: Session, user_id: int, code: str, *, box: SecretBox, now: datetime) -> bool:
    """True when ``code`` is the app's code of now (each time step taken once) or an unused recovery code."""
    user = _user(session, user_id)
    if user.totp_enabled_at is None or user.totp_secret is None:
        return False
    given = _normal(code)
    step = _matching_step(box.open(user.totp_secret), given, now, user.totp_last_step)
    if step is not None:
        taken = session.execute(update(User).where(User.id == user_id, (User.totp_last_step.is_(None))
                                                   | (User.totp_last_step < step)).values(totp_last_step=step))
        return bool(taken.rowcount)  # two requests with the same code at once: one wins
    if len(given) != 10:
        return False
    used = session.execute(update(RecoveryCode).where(RecoveryCode.user_id == user_id,
                                                      RecoveryCode.code_hash == _recovery_hash(given),
                                                      RecoveryCode.used_at.is_(None)).values(used_at=now))
    return bool(used.rowcount)


def recovery_codes_left(session: Session, user_id: int) -> int:
    return len(session.scalars(select(RecoveryCode.id).where(RecoveryCode.user_id == user_id,
                                                             RecoveryCode.used_at.is_(None))).all())


def _password(user: User, password: str) -> None:
    if not user.check_password(password or ""):
        raise InvalidInput("that is not your password", field="current_password")


def _required_by(session: Session, user_id: int) -> list[str]:
    """The workspaces where this person is an admin and admins need two-factor."""
    return list(session.scalars(select(Workspace.name).join(Membership, Membership.workspace_id == Workspace.id)
                                .where(Membership.user_id == user_id, Membership.role == Role.ADMIN.value,
                                       Workspace.admins_need_two_factor.is_(True)).order_by(Workspace.name)))


def turn_off(session: Session, user_id: int, password: str) -> None:
    """Two-factor off (with the password), unless a workspace this person administers requires it."""
    user = _user(session, user_id)
    _password(user, password)
    required = _required_by(session, user_id)
    if required:
        raise Conflict(f"{', '.join(required)} requires two-factor sign-in for its admins; it stays on",
                       code="two_factor_required")
    user.totp_secret, user.totp_enabled_at, user.totp_last_step = None, None, None
    session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    session.flush()


def replace_recovery_codes(session: Session, user_id: int, password: str, *, now: datetime) -> list[str]:
    """Ten new recovery codes (with the password); the old ones stop working."""
    user = _user(session, user_id)
    _password(user, password)
    if user.totp_enabled_at is None:
        raise Conflict("two-factor sign-in is off", code="two_factor_off")
    return _new_recovery_codes(session, user_id, now)


def set_admins_need_two_factor(session: Session, workspace_id: int, required: bool, *, by: User) -> Workspace:
    """Require (or stop requiring) two-factor sign-in of the workspace's admins; one must have it to require it."""
    workspace = session.get(Workspace, workspace_id)
    if workspace is None:
        raise NotFound("no such workspace")
    if required and by.totp_enabled_at is None:
        raise Conflict("turn on two-factor sign-in for yourself first (on your Account page), so that requiring it "
                       "does not lock you out", code="two_factor_off")
    workspace.admins_need_two_factor = bool(required)
    session.flush()
    return workspace


def lacks_required_two_factor(user: User, workspace: Workspace, role: Role) -> bool:
    """An admin of a workspace that requires two-factor, who has not turned it on."""
    return role is Role.ADMIN and bool(workspace.admins_need_two_factor) and user.totp_enabled_at is None
