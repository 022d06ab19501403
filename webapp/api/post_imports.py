"""``/api/v1/posts.csv``: schedule posts from a CSV file, through the shared import (dry run, then commit).

| endpoint | what |
|---|---|
| ``POST /posts.csv?dry_run=1`` | a CSV file (up to 5,000 lines): each line's fate and an ``import_id`` kept for an hour |
| ``POST /posts.csv`` | the same, committed at once (``status=approved`` to approve the posts) → 201 |
| ``POST /posts/imports/IMPORT_ID/commit`` | make exactly the posts the dry run promised, as drafts or (``status: approved``) approved |

The columns and the fates are :mod:`models.posts.import_csv`'s.
"""

from flask import Blueprint, jsonify, request

from models.core.errors import InvalidInput
from models.core.runtime import runtime
from models.imports.runs import commit, dry_run
from models.posts.import_csv import FATE_OF_CODE, MAX_POST_LINES, QUEUED, SCHEDULE, PostImport
from webapp.api.parsing import json_body
from webapp.api.serialize import iso
from webapp.api.idempotency import idempotent
from webapp.api.spec import IDEMPOTENCY_KEY, errors, json_content
from webapp.auth import api_caller
from webapp.uploads import takes_upload, uploaded_file

bp = Blueprint("api_post_imports", __name__, url_prefix="/api/v1")

TARGET = "workspace"  # a post import goes into the workspace as a whole
STATUSES = ("draft", "approved")


def _status(raw) -> bool:
    """Whether the posts are approved (``approved``) or left as drafts (``draft``, the default)."""
    if raw is None:
        return False
    if raw not in STATUSES:
        raise InvalidInput("status must be draft or approved", field="status", code="bad_status")
    return raw == "approved"


def import_report(report) -> dict:
    return {"import_id": report.import_id, "expires_at": iso(report.expires_at), "columns": report.columns,
            "counts": report.counts, "accepted": report.accepted, "lines": [
                {"line": line.number, "fate": fate.code, "accepted": fate.accepted, "message": fate.message}
                for line, fate in report.lines]}


def commit_report(result, new_rows: int) -> dict:
    return {"import_id": result.import_id, "created": result.counts.get(SCHEDULE, 0) + result.counts.get(QUEUED, 0),
            "counts": result.counts, "queued_rows": new_rows,
            "changed": [{"line": c.line, "was": c.was, "now": c.now, "message": c.message} for c in result.changed]}


@bp.post("/posts.csv")
@takes_upload
@idempotent
def posts_csv():
    """Schedule posts from a CSV file; ``?dry_run=1`` answers the per-line report and an ``import_id`` to commit."""
    caller = api_caller()
    approve = _status(request.args.get("status"))
    rt = runtime()
    checker = PostImport(clock=rt.clock, policy=rt.policy, approve=approve)
    report = dry_run(uploaded_file(), checker, workspace_id=caller.workspace.id, target=TARGET, actor=caller.actor,
                     clock=rt.clock, policy=rt.policy)
    answer = import_report(report)
    if request.args.get("dry_run") in ("1", "true"):
        return jsonify(answer)
    result = commit(report.import_id, checker, workspace_id=caller.workspace.id, target=TARGET, actor=caller.actor,
                    clock=rt.clock)
    rt.announce_due(checker.new_rows)
    answer["commit"] = commit_report(result, len(checker.new_rows))
    return jsonify(answer), 201


@bp.post("/posts/imports/<import_id>/commit")
@idempotent
def commit_posts(import_id: str):
    """Make exactly the posts the dry run accepted, re-checking each; list those whose fate changed."""
    caller = api_caller()
    body = json_body() if request.get_data(cache=True).strip() else {}
    unknown = sorted(set(body) - {"status"})
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected status", field=unknown[0], code="unknown_field")
    rt = runtime()
    checker = PostImport(clock=rt.clock, policy=rt.policy, approve=_status(body.get("status")))
    result = commit(import_id, checker, workspace_id=caller.workspace.id, target=TARGET, actor=caller.actor,
                    clock=rt.clock)
    rt.announce_due(checker.new_rows)
    return jsonify(commit_report(result, len(checker.new_rows)))


# -- the document -----------------------------------------------------------------------------

_FATES = sorted({SCHEDULE, QUEUED, "duplicate_line", "already_scheduled", "invalid_value", "malformed",
                 *FATE_OF_CODE.values()})
_REPORT = {
    "type": "object", "required": ["import_id", "expires_at", "columns", "counts", "accepted", "lines"],
    "properties": {
        "import_id": {"type": "string"},
        "expires_at": {"type": "string", "format": "date-time"},
        "columns": {"type": "array", "items": {"type": "string"}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "accepted": {"type": "integer"},
        "lines": {"type": "array", "items": {
            "type": "object", "required": ["line", "fate", "accepted"],
            "properties": {"line": {"type": "integer"}, "fate": {"enum": _FATES}, "accepted": {"type": "boolean"},
                           "message": {"type": ["string", "null"]}}}},
        "commit": {"$ref": "#/components/schemas/PostImportCommit"},
    },
}
_COMMIT = {
    "type": "object", "required": ["import_id", "created", "counts", "queued_rows", "changed"],
    "properties": {
        "import_id": {"type": "string"},
        "created": {"type": "integer", "description": "posts made"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "queued_rows": {"type": "integer", "description": "rows queued by approving them"},
        "changed": {"type": "array", "items": {
            "type": "object", "required": ["line", "was", "now"],
            "properties": {"line": {"type": "integer"}, "was": {"type": "string"}, "now": {"type": "string"},
                           "message": {"type": ["string", "null"]}}}},
    },
}
_CSV_EXAMPLE = ("body,targets,date,time,media\n"
                "Fresh bread at nine,main,2027-01-05,09:00,https://example.com/bread.jpg\n")

OPENAPI = {
    "schemas": {"PostImportReport": _REPORT, "PostImportCommit": _COMMIT},
    "paths": {
        "/api/v1/posts.csv": {
            "post": {
                "summary": f"Schedule posts from a CSV file (up to {MAX_POST_LINES:,} lines; dry run with ?dry_run=1; "
                           "honours Idempotency-Key)",
                "description": "Columns: body, targets (channel names), date and time (or local_time) in the "
                               "workspace's zone, optional media (links). Each line's fate: schedule (with the DST "
                               "note when the wall time does not exist or happens twice), bad_time, in_the_past, "
                               "unknown_channel, too_long, invalid_value, duplicate_line, already_scheduled (a post "
                               "with the same body at the same time exists); a line without a date and time goes "
                               "into the queue: queue (the posting slot it takes, after those the lines above took) "
                               "or no_slot. The dry run keeps the file for an hour "
                               "under its import_id.",
                "parameters": [
                    {"name": "dry_run", "in": "query", "required": False, "schema": {"enum": ["1", "true"]}},
                    {"name": "status", "in": "query", "required": False, "schema": {"enum": list(STATUSES)},
                     "description": "without dry_run: make the posts approved, or drafts (the default)"},
                    IDEMPOTENCY_KEY,
                ],
                "requestBody": {"required": True, "content": {
                    "text/csv": {"schema": {"type": "string"}, "example": _CSV_EXAMPLE},
                    "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
                        "file": {"type": "string", "format": "binary"}}}}}},
                "responses": {
                    "200": {"description": "The dry run's report.",
                            **json_content({"$ref": "#/components/schemas/PostImportReport"})},
                    "201": {"description": "The report, committed at once.",
                            **json_content({"$ref": "#/components/schemas/PostImportReport"})},
                    **errors("409", "413", "422")},
            },
        },
        "/api/v1/posts/imports/{import_id}/commit": {
            "parameters": [{"name": "import_id", "in": "path", "required": True,
                            "schema": {"type": "string", "maxLength": 32}}],
            "post": {
                "summary": "Make exactly the posts the dry run accepted, as drafts or approved (honours "
                           "Idempotency-Key)",
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": {"required": False, **json_content({
                    "type": "object", "properties": {"status": {"enum": list(STATUSES)}},
                    "additionalProperties": False})},
                "responses": {"200": {"description": "What was made, and the lines whose fate changed.",
                                      **json_content({"$ref": "#/components/schemas/PostImportCommit"})},
                              **errors("400", "404", "409", "413", "422")},
            },
        },
    },
}
