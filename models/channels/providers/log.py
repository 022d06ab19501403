"""``log``: the default provider. It records an outbox entry the dashboard shows, and needs nothing outside.

It is a local provider: its entries are written in the dispatch's own transaction, so an
outbox entry exists exactly when its row is published, whatever crashes when.
"""

from sqlalchemy import insert

from models.channels.outbox import OutboxEntry
from models.channels.providers.base import Delivery, SendContext, SendResult

kind = "log"
local = True
honours_idempotency_key = False


_entries = OutboxEntry.__table__
# Matched back by action id rather than by parameter order: SQLite cannot promise RETURNING's
# order for a many-row INSERT, and asking SQLAlchemy to sort it sends one INSERT per row.
_INSERT = insert(_entries).returning(_entries.c.id, _entries.c.action_id)


def deliver(deliveries: list[Delivery], context: SendContext) -> list[SendResult]:
    """One outbox entry per delivery, in one statement in the caller's transaction."""
    if not deliveries:
        return []
    if len({delivery.action_id for delivery in deliveries}) < len(deliveries):
        # Entries cannot be told apart by action (test sends carry none): one statement each.
        return [_write([delivery], context)[0] for delivery in deliveries]
    return _write(deliveries, context)


def _write(deliveries: list[Delivery], context: SendContext) -> list[SendResult]:
    returned = context.session.execute(_INSERT, [{
        "workspace_id": delivery.workspace_id,
        "channel_id": delivery.channel_id,
        "action_id": delivery.action_id,
        "attempt": delivery.attempt,
        "idempotency_key": delivery.idempotency_key,
        "body": {"action_type": delivery.action_type, "target_key": delivery.target_key,
                 "payload": delivery.payload},
        "created_at": context.now,
    } for delivery in deliveries]).all()
    entry_for = {action_id: entry_id for entry_id, action_id in returned}
    return [SendResult.success(f"outbox:{entry_for[delivery.action_id]}", "written to the outbox")
            for delivery in deliveries]
