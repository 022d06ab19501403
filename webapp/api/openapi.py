"""The API's OpenAPI 3.1 document, served at ``/api/v1/openapi.json``.

Each API module describes its own routes beside its handlers, in a module-level ``OPENAPI``
(``{"paths": ..., "schemas": ...}``); this module puts them together with what they share
(the error shape, the bearer token, the common answers). ``tests/integration/test_openapi.py``
holds the document to the code: every route documented and every documented route served,
each documented example accepted, each required field refused when missing, and Schemathesis
drives the live API with what the document says it accepts.
"""

from flask import Blueprint, jsonify

from webapp.api import (actions, channels, drips, media, post_imports, post_review, posts, recurring, tokens, works,
                        workspace)
from webapp.api.spec import ERROR, RESPONSES

bp = Blueprint("api_openapi", __name__, url_prefix="/api/v1")
API_MODULES = (actions, channels, posts, post_imports, post_review, recurring, works, drips, media, tokens, workspace)


def document() -> dict:
    """The whole document: every API module's paths and schemas, and the shared parts."""
    paths, schemas = {}, {"Error": ERROR}
    for module in API_MODULES:
        paths.update(module.OPENAPI["paths"])
        schemas.update(module.OPENAPI["schemas"])
    return {
        "openapi": "3.1.0",
        "info": {"title": "Tickwork API", "version": "1",
                 "description": "Actions that fire at a wall-clock time, at most once. Bearer tokens are bound to "
                                "one workspace; every error is `{\"error\": {\"code\", \"message\", \"field\"}}`."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": schemas, "responses": RESPONSES},
        "paths": paths,
    }


@bp.get("/openapi.json")
def openapi():
    """The API's OpenAPI document (public: it describes the API, never a workspace's content)."""
    return jsonify(document())
