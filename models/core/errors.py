"""Typed domain errors. Each shell maps them to its own answer (a 4xx JSON, a flash, an exit code)."""


class DomainError(Exception):
    """Something a caller asked for cannot be done; nothing was changed."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None, **detail):
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code
        self.detail = detail


class InvalidInput(DomainError):
    status = 422
    code = "invalid"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class TooLarge(DomainError):
    status = 413
    code = "payload_too_large"


class Unavailable(DomainError):
    """A service the request needs cannot take it now (a queue's storage unreachable); nothing was left half done."""

    status = 503
    code = "unavailable"


class ConfigurationError(Exception):
    """A setting Tickwork cannot start with; the message names the setting and what it expects."""
