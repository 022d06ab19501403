"""``/api/v1/channels/NAME/slots``: a channel's posting times, read by every member, set by ops and admins."""

from flask import Blueprint, jsonify

from models.channels.slots import find_channel, save_slots
from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.posts.access import check_may_set_posting_times
from webapp.api.parsing import json_body
from webapp.api.spec import errors, json_content
from webapp.auth import api_caller

bp = Blueprint("api_channels", __name__, url_prefix="/api/v1/channels")


def slots_json(channel, zone: str) -> dict:
    return {"channel": channel.name, "timezone": zone, "slots": channel.posting_slots or []}


@bp.get("/<channel_name>/slots")
def slots(channel_name: str):
    """The channel's posting times, in the workspace's zone."""
    caller = api_caller()
    channel = find_channel(db.session, caller.workspace.id, channel_name)
    return jsonify(slots_json(channel, caller.workspace.timezone))


@bp.put("/<channel_name>/slots")
def put_slots(channel_name: str):
    """Replace the channel's posting times (ops and admins); ``{"slots": []}`` clears them."""
    caller = api_caller()
    check_may_set_posting_times(caller.role)
    body = json_body()
    unknown = sorted(set(body) - {"slots"})
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0][:40]!r}; expected slots", field=unknown[0][:40],
                           code="unknown_field")
    if "slots" not in body:
        raise InvalidInput("slots is required", field="slots", code="missing")
    with write_session() as session:
        channel = save_slots(session, caller.workspace.id, channel_name, body["slots"])
        return jsonify(slots_json(channel, caller.workspace.timezone))


# -- the document -----------------------------------------------------------------------------

_SLOT = {"type": "object", "required": ["days", "time"], "additionalProperties": False, "properties": {
    "days": {"type": "array", "minItems": 1, "maxItems": 7, "uniqueItems": True,
             "items": {"enum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}},
    "time": {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$", "description": "a wall time, HH:MM"}}}
_SLOTS = {"type": "array", "maxItems": 50, "items": {"$ref": "#/components/schemas/PostingSlot"},
          "description": "wall times in the workspace's zone; a day and time may appear once"}
_CHANNEL = {"name": "channel_name", "in": "path", "required": True,
            "schema": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"}}

OPENAPI = {
    "schemas": {
        "PostingSlot": _SLOT,
        "PostingSlots": {"type": "object", "required": ["channel", "timezone", "slots"], "properties": {
            "channel": {"type": "string"}, "timezone": {"type": "string"}, "slots": _SLOTS}},
        "NewPostingSlots": {"type": "object", "required": ["slots"], "additionalProperties": False,
                            "properties": {"slots": _SLOTS}},
    },
    "paths": {
        "/api/v1/channels/{channel_name}/slots": {
            "parameters": [_CHANNEL],
            "get": {"summary": "A channel's posting times (the queue's slots)",
                    "responses": {"200": {"description": "Its posting times.",
                                          **json_content({"$ref": "#/components/schemas/PostingSlots"})},
                                  **errors("404")}},
            "put": {"summary": "Replace a channel's posting times (ops and admins)",
                    "requestBody": {"required": True, **json_content(
                        {"$ref": "#/components/schemas/NewPostingSlots"},
                        {"slots": [{"days": ["mon", "tue", "wed", "thu", "fri"], "time": "09:00"},
                                   {"days": ["sat"], "time": "11:30"}]})},
                    "responses": {"200": {"description": "Its posting times, as stored.",
                                          **json_content({"$ref": "#/components/schemas/PostingSlots"})},
                                  **errors("400", "403", "404", "413", "422")}},
        },
    },
}
