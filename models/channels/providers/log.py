"""``log``: the default provider. It records an outbox entry the dashboard shows, and needs nothing outside.

It is a local provider: its entries are written in the dispatch's own transaction, so an
outbox entry exists exactly when its row is published, whatever crashes when.
"""

import json

from sqlalchemy import ARRAY, JSON, BigInteger, Integer, String, Text, bindparam, cast, func, insert, select

from models.channels.outbox import OutboxEntry
from models.channels.providers.base import Delivery, SendContext, SendResult

kind = "log"
local = True
honours_idempotency_key = False


_entries = OutboxEntry.__table__
# Matched back by action id rather than by parameter order: SQLite cannot promise RETURNING's
# order for a many-row INSERT, and asking SQLAlchemy to sort it sends one INSERT per row.
_INSERT = insert(_entries).returning(_entries.c.id, _entries.c.action_id)
# On PostgreSQL a chunk's entries are one INSERT ... SELECT over arrays of their values: the
# statement's text is the same whatever the chunk's size, so it is parsed once, not per call.
_COLUMNS = (("workspace_id", BigInteger), ("channel_id", BigInteger), ("action_id", BigInteger), ("attempt", Integer),
            ("idempotency_key", String), ("body", Text))
_GIVEN = func.unnest(*(bindparam(name, type_=ARRAY(kind)) for name, kind in _COLUMNS)).table_valued(
    *(name for name, _ in _COLUMNS)).render_derived(name="given")
_INSERT_ARRAYS = insert(_entries).from_select(
    [name for name, _ in _COLUMNS] + ["created_at"],
    select(*(_GIVEN.c[name] for name, _ in _COLUMNS[:-1]), cast(_GIVEN.c.body, JSON),
           bindparam("created_at", type_=_entries.c.created_at.type)),
).returning(_entries.c.id, _entries.c.action_id)


def deliver(deliveries: list[Delivery], context: SendContext) -> list[SendResult]:
    """One outbox entry per delivery, in one statement in the caller's transaction."""
    if not deliveries:
        return []
    if len({delivery.action_id for delivery in deliveries}) < len(deliveries):
        # Entries cannot be told apart by action (test sends carry none): one statement each.
        return [_write([delivery], context)[0] for delivery in deliveries]
    return _write(deliveries, context)


def _write(deliveries: list[Delivery], context: SendContext) -> list[SendResult]:
    if context.session.connection().dialect.name == "postgresql":
        returned = context.session.execute(_INSERT_ARRAYS, {
            "workspace_id": [delivery.workspace_id for delivery in deliveries],
            "channel_id": [delivery.channel_id for delivery in deliveries],
            "action_id": [delivery.action_id for delivery in deliveries],
            "attempt": [delivery.attempt for delivery in deliveries],
            "idempotency_key": [delivery.idempotency_key for delivery in deliveries],
            "body": [json.dumps(_body(delivery)) for delivery in deliveries],
            "created_at": context.now,
        }).all()
        return _results(deliveries, returned)
    returned = context.session.execute(_INSERT, [{
        "workspace_id": delivery.workspace_id,
        "channel_id": delivery.channel_id,
        "action_id": delivery.action_id,
        "attempt": delivery.attempt,
        "idempotency_key": delivery.idempotency_key,
        "body": _body(delivery),
        "created_at": context.now,
    } for delivery in deliveries]).all()
    return _results(deliveries, returned)


def _body(delivery: Delivery) -> dict:
    return {"action_type": delivery.action_type, "target_key": delivery.target_key, "payload": delivery.payload}


def _results(deliveries: list[Delivery], returned) -> list[SendResult]:
    entry_for = {action_id: entry_id for entry_id, action_id in returned}
    return [SendResult.success(f"outbox:{entry_for[delivery.action_id]}", "written to the outbox")
            for delivery in deliveries]
