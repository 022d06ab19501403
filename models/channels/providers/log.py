"""``log``: the default provider. It records an outbox entry the dashboard shows, and needs nothing outside.

It is a local provider: its entries are written in the dispatch's own transaction, so an
outbox entry exists exactly when its row is published, whatever crashes when.
"""

import json

from sqlalchemy import JSON, BigInteger, Integer, Text, bindparam, cast, column, func, insert, select

from models.channels.outbox import OutboxEntry
from models.channels.providers.accepts import DEFAULT
from models.channels.providers.base import Delivery, SendContext, SendResult

kind = "log"
local = True
honours_idempotency_key = False
accepts = DEFAULT  # the entry keeps the payload as it is: text up to 10,000 characters, media by id


_entries = OutboxEntry.__table__
# A chunk's entries are one INSERT ... SELECT over the entries given as one JSON document
# (json_to_recordset on PostgreSQL, json_each on SQLite): the statement's text is the same
# whatever the chunk's size (parsed once, not per call), and the values cross as one
# parameter, encoded by the json module in one call. They are matched back by action id, as
# neither database promises the order of a many-row INSERT's RETURNING.
_COLUMNS = (("workspace_id", BigInteger), ("channel_id", BigInteger), ("action_id", BigInteger), ("attempt", Integer),
            ("idempotency_key", Text), ("body", JSON))
_GIVEN = func.json_to_recordset(cast(bindparam("entries", type_=Text()), JSON)).table_valued(
    *(column(name, kind) for name, kind in _COLUMNS)).render_derived(name="given", with_types=True)
_INSERT_GIVEN = insert(_entries).from_select(
    [name for name, _ in _COLUMNS] + ["created_at"],
    select(*(_GIVEN.c[name] for name, _ in _COLUMNS), bindparam("created_at", type_=_entries.c.created_at.type)),
).returning(_entries.c.id, _entries.c.action_id)
_EACH = func.json_each(bindparam("entries", type_=Text())).table_valued("value", name="each")
_INSERT_GIVEN_SQLITE = insert(_entries).from_select(
    [name for name, _ in _COLUMNS] + ["created_at"],
    select(*(func.json_extract(_EACH.c.value, f"$.{name}") for name, _ in _COLUMNS),
           bindparam("created_at", type_=_entries.c.created_at.type)).select_from(_EACH),
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
    statement = _INSERT_GIVEN if context.session.connection().dialect.name == "postgresql" else _INSERT_GIVEN_SQLITE
    returned = context.session.execute(statement, {"created_at": context.now, "entries": json.dumps([
        {"workspace_id": delivery.workspace_id, "channel_id": delivery.channel_id, "action_id": delivery.action_id,
         "attempt": delivery.attempt, "idempotency_key": delivery.idempotency_key, "body": _body(delivery)}
        for delivery in deliveries])}).all()
    return _results(deliveries, returned)


def _body(delivery: Delivery) -> dict:
    return {"action_type": delivery.action_type, "target_key": delivery.target_key, "payload": delivery.payload}


def _results(deliveries: list[Delivery], returned) -> list[SendResult]:
    entry_for = {action_id: entry_id for entry_id, action_id in returned}
    return [SendResult.success(f"outbox:{entry_for[delivery.action_id]}", "written to the outbox")
            for delivery in deliveries]
