"""``log``: the default provider. It records an outbox entry the dashboard shows, and needs nothing outside."""

from sqlalchemy import insert

from models.database import write_session
from models.outbox import OutboxEntry
from models.providers.base import Delivery, SendContext, SendResult

kind = "log"
honours_idempotency_key = False


_INSERT = insert(OutboxEntry.__table__).returning(OutboxEntry.__table__.c.id)


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Write one outbox entry in a transaction of its own."""
    with write_session(context.engine) as session:
        entry_id = session.execute(_INSERT, {
            "workspace_id": delivery.workspace_id,
            "channel_id": delivery.channel_id,
            "action_id": delivery.action_id,
            "attempt": delivery.attempt,
            "idempotency_key": delivery.idempotency_key,
            "body": {"action_type": delivery.action_type, "target_key": delivery.target_key,
                     "payload": delivery.payload},
            "created_at": context.now,
        }).scalar_one()
    return SendResult.success(f"outbox:{entry_id}", "written to the outbox")
