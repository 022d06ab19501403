"""Providers: one small module per channel kind, each behind the interface in :mod:`.base`.

Adding one: write ``models/providers/<kind>.py`` with ``kind``, ``honours_idempotency_key``
and ``send(delivery, context) -> SendResult``, and list it in :data:`PROVIDERS`. A provider
that only writes to Tickwork's own database sets ``local = True`` and offers
``deliver(deliveries, context) -> [SendResult]`` instead (see ``log``). A provider whose
connection is worth keeping across the messages of a dispatch chunk also offers
``open_session()``, an object with the same ``send`` and a ``close()`` (see ``smtp``). A
provider with settings of its own to check offers ``validate_config(config)``, which raises
:class:`~models.core.errors.InvalidInput`; saving a channel calls it (see ``smtp``).

Every provider declares what it accepts, ``accepts = Accepts(...)`` (:mod:`.accepts`): its
text limits as the network counts them and its media rules. The check at save, the
composer's counters and the media prepared at send read that declaration and nothing else.

A network's provider offers ``post_url(config, provider_id)``: the address of a published post
on that network, built from the id its send returned (None where it cannot be derived); the
posts page and the API's post answers show it through :func:`post_url`.

A provider that calls out never builds its own client or socket: it sends with
``context.http`` (an egress client from :mod:`.http`) or connects with
:func:`models.core.egress.connect_socket`, so the egress policy checks every connection, and
checks its destination setting at save time with :func:`models.core.egress.check_url` (or
``check_host``). A refused destination is ``permanent``, "destination not allowed".
"""

from dataclasses import replace

from models.core.database import write_session
from models.channels.providers import (bluesky, discord, facebook, instagram, linkedin, log, mastodon, postmark, slack,
                                       smtp, telegram, threads, twilio, webhook, x)
from models.channels.providers.accepts import DEFAULT, Accepts
from models.channels.providers.base import (Delivery, LocalProvider, MediaFile, Provider, SendContext, SendOutcome,
                                            SendResult)

PROVIDERS: dict[str, Provider | LocalProvider] = {module.kind: module for module in (
    log, webhook, smtp, postmark, twilio, mastodon, bluesky, x, linkedin, threads, facebook, instagram,
    discord, slack, telegram)}


def provider_for(kind: str) -> Provider | LocalProvider:
    try:
        return PROVIDERS[kind]
    except KeyError:
        raise LookupError(f"no provider for channel kind {kind!r}") from None


def accepts_for(kind: str) -> Accepts:
    """What channels of ``kind`` accept: its provider's declaration (the default for a kind that declares none)."""
    return getattr(PROVIDERS.get(kind), "accepts", None) or DEFAULT


def is_local(kind: str) -> bool:
    """Whether ``kind``'s provider delivers into Tickwork's own database (an unknown kind does not)."""
    return kind in PROVIDERS and bool(getattr(PROVIDERS[kind], "local", False))


def post_url(kind: str, config: dict | None, provider_id: str | None) -> str | None:
    """The network's address of what a row published (from its provider id), or None where none can be derived.

    Each network's provider may offer ``post_url(config, provider_id)``; a kind without one, an
    empty id, or an id its provider does not recognise gives None, never an error.
    """
    link = getattr(PROVIDERS.get(kind), "post_url", None)
    if link is None or not isinstance(provider_id, str) or not provider_id:
        return None
    return link(config if isinstance(config, dict) else {}, provider_id)


def send_alone(kind: str, delivery: Delivery, context: SendContext) -> SendResult:
    """One delivery outside any dispatch (a channel's test send); a local provider writes in a transaction of its own."""
    provider = provider_for(kind)
    if not is_local(kind):
        return provider.send(delivery, context)
    with write_session() as session:
        (result,) = provider.deliver([delivery], replace(context, session=session))
    return result


__all__ = ["PROVIDERS", "Accepts", "Delivery", "LocalProvider", "MediaFile", "Provider", "SendContext", "SendOutcome",
           "SendResult", "accepts_for", "is_local", "post_url", "provider_for",
           "send_alone"]
