"""Invitation links: the signed, expiring address of one invitation, which its person opens to answer it.

``GET /invitations/<token>`` is a public route (``webapp/public.py``): the token is the
invitation's id signed with the app's secret, good until the invitation expires. The page
shows the invitation and changes nothing; accepting or declining is done signed in as the
invited person (``POST /account/invitations/ID/accept|decline``, with a CSRF token).
"""

from flask import Blueprint, current_app, render_template, url_for
from flask_login import current_user
from itsdangerous import BadData, URLSafeTimedSerializer

from models.accounts.invitations import INVITATION_DAYS, find_invitation
from models.accounts.tables import Invitation
from models.core.database import db
from models.core.runtime import runtime
from webapp.drip_runtime import base_url

bp = Blueprint("invitations", __name__)

NOT_VALID = "This invitation link is not valid any more: it was answered, withdrawn or has expired. Ask an admin of " \
            "the workspace for a new one."
MAX_LINK_TOKEN = 200


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="tickwork-invitation")


def invitation_link(invitation: Invitation) -> str:
    """The invitation's signed address, under TICKWORK_BASE_URL when it is set."""
    path = url_for("invitations.show", token=_signer().dumps(invitation.id))
    root = base_url()
    if root:
        from flask import request

        return root.rstrip("/") + path[len(request.script_root):]
    return url_for("invitations.show", token=_signer().dumps(invitation.id), _external=True)


def invitation_of_link(token: str) -> Invitation | None:
    """The pending invitation a link names, or None (a bad signature, a link older than invitations live)."""
    if not isinstance(token, str) or len(token) > MAX_LINK_TOKEN:
        return None
    try:
        invitation_id = _signer().loads(token, max_age=INVITATION_DAYS * 86400)
    except BadData:
        return None
    invitation = find_invitation(db.session, invitation_id)
    return invitation if invitation is not None and invitation.pending(runtime().now()) else None


@bp.get("/invitations/<token>")
def show(token: str):
    """One invitation, for whoever holds its link; answering it needs its person signed in."""
    invitation = invitation_of_link(token)
    if invitation is None:
        return render_template("error.html", status=404, message=NOT_VALID), 404
    mine = current_user.is_authenticated and current_user.email.lower() == invitation.email
    response = current_app.make_response(render_template("account/invitation.html", invitation=invitation, mine=mine,
                                                         token=token))
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response
