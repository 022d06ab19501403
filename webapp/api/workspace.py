"""``/api/v1/workspace``: the token's workspace and its review settings."""

from flask import Blueprint, jsonify

from models.accounts.workspaces import set_review_settings
from models.core.database import write_session
from models.core.errors import InvalidInput
from webapp.api.parsing import json_body
from webapp.api.spec import errors, json_content
from webapp.auth import api_caller

bp = Blueprint("api_workspace", __name__, url_prefix="/api/v1/workspace")


def workspace_json(workspace) -> dict:
    return {"name": workspace.name, "timezone": workspace.timezone, "review": workspace.review,
            "outside_approval": bool(workspace.outside_approval)}


@bp.get("")
def show():
    """The token's workspace: its name, zone and review settings."""
    return jsonify(workspace_json(api_caller().workspace))


@bp.patch("")
def update():
    """Change the review settings (admins): ``review`` (off | required), ``outside_approval``."""
    caller = api_caller()
    body = json_body()
    unknown = sorted(set(body) - {"review", "outside_approval"})
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected outside_approval, review", field=unknown[0],
                           code="unknown_field")
    if not body:
        raise InvalidInput("nothing to change; send review or outside_approval", code="missing")
    for name in ("review", "outside_approval"):
        if name in body and body[name] is None:
            raise InvalidInput(f"{name} cannot be null", field=name, code="missing")
    with write_session() as session:
        workspace = set_review_settings(session, caller.workspace.id, review=body.get("review"),
                                        outside_approval=body.get("outside_approval"))
        return jsonify(workspace_json(workspace))


_WORKSPACE = {"type": "object", "required": ["name", "timezone", "review", "outside_approval"], "properties": {
    "name": {"type": "string"}, "timezone": {"type": "string"}, "review": {"enum": ["off", "required"]},
    "outside_approval": {"type": "boolean"}}}

OPENAPI = {
    "schemas": {"Workspace": _WORKSPACE},
    "paths": {"/api/v1/workspace": {
        "get": {"summary": "The token's workspace", "responses": {
            "200": {"description": "The workspace.", **json_content({"$ref": "#/components/schemas/Workspace"})},
            **errors()}},
        "patch": {"summary": "Change the review settings (admins)",
                  "requestBody": {"required": True, **json_content(
                      {"type": "object", "minProperties": 1, "properties": {
                          "review": {"enum": ["off", "required"]}, "outside_approval": {"type": "boolean"}},
                       "additionalProperties": False}, {"review": "required"})},
                  "responses": {"200": {"description": "The workspace.",
                                        **json_content({"$ref": "#/components/schemas/Workspace"})},
                                **errors("400", "403", "413", "422")}},
    }},
}
