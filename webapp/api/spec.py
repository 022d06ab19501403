"""The pieces of the OpenAPI document the API modules share: the error shape, the common answers,
and small builders. Each API module describes its own routes with them, beside its handlers."""

ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "what went wrong, for programs"},
                "message": {"type": "string", "description": "what went wrong, for people"},
                "field": {"type": "string", "description": "the field, header or parameter at fault"},
            },
        },
    },
}

_WHY = {
    "400": "The body is not a JSON object.",
    "401": "No valid bearer token.",
    "403": "The token's member lacks the role this needs.",
    "404": "No such object in the token's workspace.",
    "409": "The object is not in a state that allows this.",
    "413": "The body is larger than the route takes.",
    "422": "A field is missing or wrong; `field` names it.",
    "429": "Too many requests with this token; see Retry-After.",
    "503": "A service the request needs (the works queue) cannot take it now; nothing was left half done.",
}
RESPONSES = {code: {"description": why, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
             for code, why in _WHY.items()}


def errors(*codes: str) -> dict:
    """The common error answers of an operation, plus 401 and 429 which every operation has."""
    return {code: {"$ref": f"#/components/responses/{code}"} for code in sorted({"401", "429", *codes})}


def json_content(schema: dict, example: dict | None = None) -> dict:
    content = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"content": {"application/json": content}}


def row_id(name: str) -> dict:
    """A path parameter naming a row: ids are 32-bit on PostgreSQL, so larger ones are no row of ours."""
    return {"name": name, "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}}


INSTANT = {"type": "string", "format": "date-time"}
MAYBE_INSTANT = {"type": ["string", "null"], "format": "date-time"}
LOCAL_TIME = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$",
              "description": "a wall date and time in the workspace's zone"}
IDEMPOTENCY_KEY = {"name": "Idempotency-Key", "in": "header", "required": False,
                   "schema": {"type": "string", "minLength": 1, "maxLength": 255},
                   "description": "the same key and body answer the first answer again (Idempotent-Replayed: true)"}


def nullable(schema: dict) -> dict:
    """``schema`` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def response_of(description: str, schema: dict) -> dict:
    return {"description": description, **json_content(schema)}


def page_of(key: str, item: dict) -> dict:
    """A page of ``key`` and the cursor to the next one (null on the last)."""
    return {"type": "object", "required": [key, "next_cursor"],
            "properties": {key: {"type": "array", "items": item}, "next_cursor": {"type": ["string", "null"]}}}
