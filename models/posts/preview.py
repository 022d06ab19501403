"""A post as each of its networks would show it, for the composer: who posts it, its text as the network marks
links, mentions and tags, its media, and the network's own counter.

Each target's content is :func:`~models.posts.content.content_of` (its variant, else the main
post) and its counter is :func:`~models.posts.checks.fit_on_targets`, the same declarations the
save checks, so a preview in the red is a save that would be refused.
"""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from models.channels.providers.accepts import MediaFacts
from models.channels.providers.rendering import Segment, segments_of, shown_for
from models.channels.tables import Channel
from models.posts.checks import TargetFit, fit_on_targets, known_facts
from models.posts.content import content_of

AVATAR_PREFIX = "data:image/png;base64,"  # what a connection keeps (models.channels.connections.avatar_data_url)


@dataclass(frozen=True)
class NetworkPreview:
    """One target's preview."""

    channel: Channel
    network: str
    account_name: str
    account_handle: str | None
    avatar: str | None  # a data: URL, or None (the page shows the name's first letter)
    segments: list[Segment]
    media: list[MediaFacts]
    fit: TargetFit
    tailored: bool  # the target has a variant of its own

    @property
    def initial(self) -> str:
        return (self.account_name[:1] or "?").upper()


def _account(channel: Channel) -> tuple[str, str | None, str | None]:
    """Who the channel posts as: the connected account when there is one, else what its settings name."""
    account = channel.connected_account if isinstance(channel.connected_account, dict) else {}
    config = channel.config if isinstance(channel.config, dict) else {}
    name = account.get("name") or account.get("username") or channel.name
    handle = account.get("username") or config.get("handle") or config.get("username")
    avatar = account.get("avatar")
    if not (isinstance(avatar, str) and avatar.startswith(AVATAR_PREFIX)):
        avatar = None
    return str(name), str(handle) if handle else None, avatar


def previews_for(session: Session, workspace_id: int, body: str, media, variants: dict | None,
                 channels: list[Channel]) -> list[NetworkPreview]:
    """Each target's preview of the post as typed (``media`` and each variant's media: library ids)."""
    fits = fit_on_targets(session, workspace_id, body, channels, media, variants)
    previews = []
    for channel, fit in zip(channels, fits):
        text, items = content_of(body or "", media, variants, channel.name)
        name, handle, avatar = _account(channel)
        previews.append(NetworkPreview(
            channel=channel, network=shown_for(channel.kind).network, account_name=name, account_handle=handle,
            avatar=avatar, segments=segments_of(text, channel.kind), media=known_facts(session, workspace_id, items),
            fit=fit, tailored=channel.name in (variants or {})))
    return previews
