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


_INSERT = insert(OutboxEntry.__table__).returning(OutboxEntry.__table__.c.id, sort_by_parameter_order=True)


def deliver(deliveries: list[Delivery], context: SendContext) -> list[SendResult]:
    """One outbox entry per delivery, in one statement in the caller's transaction."""
    if not deliveries:
        return []
    entry_ids = context.session.execute(_INSERT, [{
        "workspace_id": delivery.workspace_id,
        "channel_id": delivery.channel_id,
        "action_id": delivery.action_id,
        "attempt": delivery.attempt,
        "idempotency_key": delivery.idempotency_key,
        "body": {"action_type": delivery.action_type, "target_key": delivery.target_key,
                 "payload": delivery.payload},
        "created_at": context.now,
    } for delivery in deliveries]).scalars().all()
    return [SendResult.success(f"outbox:{entry_id}", "written to the outbox") for entry_id in entry_ids]
