"""A person's own account: password, sessions, API tokens, invitations, two-factor sign-in.

Every signed-in person may open it, a member of no workspace too (an invitation waits there).

| route | what |
|---|---|
| ``GET /account`` | the page |
| ``POST /account/password`` | change the password: every session ends, this browser signs in afresh |
| ``POST /account/sign-out-everywhere`` | end every session of this person, this one included |
| ``POST /account/tokens`` | make an API token in the current workspace (name, optional expiry), shown once |
| ``POST /account/tokens/ID/revoke`` | revoke one of this person's tokens in the current workspace |
| ``POST /account/invitations/ID/accept`` | join the workspace an invitation for this person's email names |
| ``POST /account/invitations/ID/decline`` | say no to it |
| ``POST /account/two-factor`` | begin setting up two-factor sign-in: a new secret for an authenticator app |
| ``POST /account/two-factor/confirm`` | a code from the app turns it on; recovery codes are shown once |
| ``POST /account/two-factor/off`` | turn it off (with the password) |
| ``POST /account/two-factor/recovery-codes`` | ten new recovery codes (with the password) |
"""

from flask import Blueprint, flash, g, redirect, request, url_for
from flask_login import current_user, login_required

from models.accounts import invitations, two_factor
from models.accounts.sessions import change_own_password, end_sessions_of, live_sessions_of
from models.accounts import tokens as api_tokens
from models.accounts.tokens import expiry_after, issue_token, list_tokens, token_state
from models.accounts.tables import Role
from models.core.database import db, write_session
from models.core.errors import DomainError, Forbidden
from models.core.runtime import runtime
from webapp.auth import session_idle
from webapp.views.context import render_page, viewer

bp = Blueprint("account", __name__)


def current_viewer():
    """The viewer, or None for a person who belongs to no workspace (yet)."""
    try:
        return viewer()
    except Forbidden:
        return None


def render_account(*, error: DomainError | None = None, status: int = 200, **extra):
    v = current_viewer()
    now = runtime().now()
    context = dict(v=v, user=current_user, error=error, now=now,
                   sessions=live_sessions_of(db.session, current_user.id, now=now, idle=session_idle()),
                   this_session=g.get("user_session_id"), token_state=token_state, new_token=None,
                   tokens=list_tokens(db.session, v.workspace.id, user_id=current_user.id) if v else [],
                   invitations=invitations.pending_for(db.session, current_user.email, now=now),
                   two_factor_on=current_user.totp_enabled_at is not None, setup=None, recovery_codes=None,
                   codes_left=two_factor.recovery_codes_left(db.session, current_user.id))
    context.update(extra)
    return render_page("account/account.html", **context), status


@bp.get("/account")
@login_required
def index():
    """This person's account."""
    return render_account()


@bp.post("/account/password")
@login_required
def password():
    """Change this person's password; every session of theirs ends and this browser signs in afresh."""
    from webapp.pages import sign_in

    form = request.form
    try:
        with write_session() as session:
            ended = change_own_password(session, current_user.id, current=form.get("current_password", ""),
                                        new=form.get("password", ""), confirm=form.get("confirm_password", ""),
                                        now=runtime().now())
    except DomainError as error:
        return render_account(error=error, status=error.status)
    sign_in(current_user._get_current_object())
    others = max(ended - 1, 0)
    flash(f"Password changed. {others} other session{'s' if others != 1 else ''} signed out.", "ok")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/sign-out-everywhere")
@login_required
def logout_everywhere():
    """End every session of this person, in every browser, this one included."""
    from webapp.pages import sign_out

    with write_session() as session:
        end_sessions_of(session, current_user.id, now=runtime().now(), why="everywhere")
    sign_out("everywhere")
    flash("Signed out everywhere: every browser signed in as you must sign in again.", "ok")
    return redirect(url_for("pages.login"), code=303)


@bp.post("/account/tokens")
@login_required
def create_token():
    """Make an API token for this person in the current workspace; its secret is shown on this answer only."""
    v = viewer()
    if two_factor.lacks_required_two_factor(v.user, v.workspace, v.role):
        from webapp.auth import TWO_FACTOR_NEEDED

        raise Forbidden(TWO_FACTOR_NEEDED, code="two_factor_required")  # a token would be a way around it
    now = runtime().now()
    try:
        with write_session() as session:
            raw = issue_token(session, v.user, v.workspace, now, name=request.form.get("name", ""),
                              expires_at=expiry_after(request.form.get("expires_in_days"), now=now))
    except DomainError as error:
        return render_account(error=error, status=error.status)
    return render_account(new_token=raw, status=201)


@bp.post("/account/tokens/<int:token_id>/revoke")
@login_required
def revoke_token(token_id: int):
    """Revoke one of this person's tokens in the current workspace; it stops working at once."""
    v = viewer()
    with write_session() as session:
        token = api_tokens.revoke_token(session, v.workspace.id, token_id, user_id=v.user.id, role=Role.MARKETER,
                             now=runtime().now())
        name = token.name or "unnamed"
    flash(f"Token {name!r} revoked: it stops working at once.", "ok")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/invitations/<int:invitation_id>/accept")
@login_required
def accept_invitation(invitation_id: int):
    """Join the workspace this person was invited to, with the invitation's role; look at it now."""
    from flask import session as cookie

    with write_session() as session:
        membership = invitations.accept(session, invitation_id, current_user._get_current_object(),
                                        now=runtime().now())
        workspace_id, name, role = membership.workspace_id, membership.workspace.name, membership.role
    cookie["workspace_id"] = workspace_id
    flash(f"You joined {name} as {role}.", "ok")
    return redirect(url_for("pages.index"), code=303)


@bp.post("/account/invitations/<int:invitation_id>/decline")
@login_required
def decline_invitation(invitation_id: int):
    """Say no to an invitation; nothing else changes."""
    with write_session() as session:
        name = invitations.decline(session, invitation_id, current_user._get_current_object(),
                                   now=runtime().now()).workspace.name
    flash(f"Invitation to {name} declined.", "ok")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/two-factor")
@login_required
def two_factor_begin():
    """Begin setting up two-factor sign-in: a new secret to put in an authenticator app, then a code to confirm."""
    try:
        with write_session() as session:
            secret = two_factor.begin_setup(session, current_user.id, box=runtime().secret_box)
    except DomainError as error:
        return render_account(error=error, status=error.status)
    return render_account(setup={"secret": secret, "uri": two_factor.provisioning_uri(secret, current_user.email)})


@bp.post("/account/two-factor/confirm")
@login_required
def two_factor_confirm():
    """Turn two-factor sign-in on with a code from the app; the recovery codes are shown on this answer only."""
    try:
        with write_session() as session:
            codes = two_factor.confirm_setup(session, current_user.id, request.form.get("code", ""),
                                             box=runtime().secret_box, now=runtime().now())
    except DomainError as error:
        return render_account(error=error, status=error.status)
    db.session.expire_all()
    return render_account(recovery_codes=codes)


@bp.post("/account/two-factor/off")
@login_required
def two_factor_off():
    """Turn two-factor sign-in off (the password again, unless a workspace requires it of its admins)."""
    try:
        with write_session() as session:
            two_factor.turn_off(session, current_user.id, request.form.get("current_password", ""))
    except DomainError as error:
        return render_account(error=error, status=error.status)
    flash("Two-factor sign-in is off: the password alone signs you in.", "ok")
    return redirect(url_for("account.index"), code=303)


@bp.post("/account/two-factor/recovery-codes")
@login_required
def recovery_codes():
    """Ten new recovery codes (the password again); the old ones stop working."""
    try:
        with write_session() as session:
            codes = two_factor.replace_recovery_codes(session, current_user.id,
                                                      request.form.get("current_password", ""), now=runtime().now())
    except DomainError as error:
        return render_account(error=error, status=error.status)
    return render_account(recovery_codes=codes)
