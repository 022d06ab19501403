"""Providers: one small module per channel kind, each behind the interface in :mod:`.base`.

Adding one: write ``models/providers/<kind>.py`` with ``kind``, ``honours_idempotency_key``
and ``send(delivery, context) -> SendResult``, and list it in :data:`PROVIDERS`.
"""

from models.providers import log, mastodon, postmark, smtp, twilio, webhook
from models.providers.base import Delivery, Provider, SendContext, SendOutcome, SendResult

PROVIDERS: dict[str, Provider] = {module.kind: module for module in (log, webhook, smtp, postmark, twilio, mastodon)}


def provider_for(kind: str) -> Provider:
    try:
        return PROVIDERS[kind]
    except KeyError:
        raise LookupError(f"no provider for channel kind {kind!r}") from None


__all__ = ["PROVIDERS", "Delivery", "Provider", "SendContext", "SendOutcome", "SendResult", "provider_for"]
