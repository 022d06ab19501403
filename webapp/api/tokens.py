"""API tokens over JSON: list them (never their secret) and revoke one.

| route | who | what |
|---|---|---|
| ``GET /api/v1/tokens`` | any member | their own tokens in the workspace; an admin sees every member's |
| ``DELETE /api/v1/tokens/ID`` | any member | revoke their own token; an admin, anyone's in the workspace |

A token is made by ``tickwork token create`` or on the dashboard's Account page, and shown once.
"""

from flask import Blueprint, jsonify

from models.accounts.permissions import Permission, can
from models.accounts.tables import ApiToken
from models.accounts.tokens import list_tokens, revoke_token, token_state
from models.core.database import db, write_session
from models.core.runtime import runtime
from webapp.api.serialize import iso
from webapp.api.spec import MAYBE_INSTANT, INSTANT, errors, ref, response_of, row_id
from webapp.auth import api_caller

bp = Blueprint("api_tokens", __name__, url_prefix="/api/v1/tokens")


def token_json(token: ApiToken, *, now, current_id: int | None = None) -> dict:
    return {"id": token.id, "name": token.name, "email": token.user.email, "state": token_state(token, now),
            "created_at": iso(token.created_at), "expires_at": iso(token.expires_at),
            "last_used_at": iso(token.last_used_at), "revoked_at": iso(token.revoked_at),
            "current": token.id == current_id}


@bp.get("")
def index():
    """The caller's tokens in the workspace (an admin's list holds every member's), newest first."""
    caller = api_caller()
    mine = None if can(caller.role, Permission.ADMINISTER) else caller.user.id
    now = runtime().now()
    tokens = list_tokens(db.session, caller.workspace.id, user_id=mine)
    return jsonify({"tokens": [token_json(t, now=now, current_id=caller.token_id) for t in tokens]})


@bp.delete("/<int:token_id>")
def revoke(token_id: int):
    """Revoke a token: it stops working at once (revoking it again is a no-op)."""
    caller = api_caller()
    now = runtime().now()
    with write_session() as session:
        token = revoke_token(session, caller.workspace.id, token_id, user_id=caller.user.id, role=caller.role,
                             now=now)
        answer = token_json(token, now=now, current_id=caller.token_id)
    return jsonify(answer)


OPENAPI = {
    "schemas": {
        "Token": {
            "type": "object",
            "required": ["id", "name", "email", "state", "created_at", "expires_at", "last_used_at", "revoked_at",
                         "current"],
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": ["string", "null"], "description": "what the token is for"},
                "email": {"type": "string", "description": "the member the token acts as"},
                "state": {"enum": ["live", "expired", "revoked"]},
                "created_at": INSTANT,
                "expires_at": MAYBE_INSTANT,
                "last_used_at": MAYBE_INSTANT,
                "revoked_at": MAYBE_INSTANT,
                "current": {"type": "boolean", "description": "the token this request was made with"},
            },
        },
    },
    "paths": {
        "/api/v1/tokens": {
            "get": {"summary": "The caller's tokens, never their secret (an admin's list holds every member's)",
                    "responses": {"200": response_of("The tokens.", {
                        "type": "object", "required": ["tokens"],
                        "properties": {"tokens": {"type": "array", "items": ref("Token")}}}),
                        **errors()}},
        },
        "/api/v1/tokens/{token_id}": {
            "parameters": [row_id("token_id")],
            "delete": {"summary": "Revoke a token (one's own; an admin's, anyone's in the workspace)",
                       "responses": {"200": response_of("The revoked token.", ref("Token")), **errors("404")}},
        },
    },
}
