"""What the drip routes of both shells share: the sending context, and the follow-up after a campaign moves."""

from flask import current_app

from models.core.moves import Actor
from models.core.runtime import runtime
from models.drips.advance import follow_campaign
from models.drips.sending import SendingContext


def base_url() -> str | None:
    """TICKWORK_BASE_URL: the public address links are made under (None when unset)."""
    return current_app.config.get("TICKWORK_BASE_URL")


def sending_context(actor: Actor) -> SendingContext:
    rt = runtime()
    return SendingContext(secret_box=rt.secret_box, base_url=base_url(), policy=rt.policy, actor=actor)


def follow(campaign_id: int, actor: Actor) -> dict:
    """After a pause, resume or archive has committed: cancel, re-mint or exit what follows, in batches, now."""
    rt = runtime()
    return follow_campaign(campaign_id, clock=rt.clock, policy=rt.policy, secret_box=rt.secret_box,
                           base_url=base_url(), actor=actor, announce=rt.announce_due)
