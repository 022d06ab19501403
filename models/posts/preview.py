"""A post as each of its networks would show it, for the composer: who posts it, its text as the network marks
links, mentions and tags, its media, and the network's own counter.

Each target's content is :func:`~models.posts.content.content_of` (its variant, else the main
post) and its counter is :func:`~models.posts.checks.fit_on_targets`, the same declarations the
save checks, so a preview in the red is a save that would be refused. Under it come what follows the
post there: the thread's items as replies on a network with replies, the first comment on one with
comments, each with its own counter (:func:`~models.posts.threads.fit_item`). Thread items are the
same on every target that takes them: a variant replaces the post's head only.
"""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from models.channels.providers.accepts import MediaFacts
from models.channels.providers.rendering import Segment, segments_of, shown_for
from models.channels.tables import Channel
from models.posts.checks import TargetFit, fit_on_targets, known_facts
from models.posts.content import content_of
from models.posts.threads import COMMENT, THREAD, ItemFit, fit_item

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
    follow_ups: tuple["FollowUpPreview", ...] = ()  # the thread's replies, then the first comment, as sent there

    @property
    def initial(self) -> str:
        return (self.account_name[:1] or "?").upper()


@dataclass(frozen=True)
class FollowUpPreview:
    """A thread item (``item`` 2, 3, ...) or the first comment (``item`` "comment") as one network shows it."""

    item: int | str
    segments: list[Segment]
    media: list[MediaFacts]
    fit: ItemFit

    @property
    def label(self) -> str:
        return "First comment" if self.item == COMMENT else f"Item {self.item}, a reply"


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


def _follow_ups(session: Session, workspace_id: int, channel: Channel, thread, first_comment
                ) -> tuple[FollowUpPreview, ...]:
    items = [(number, item) for number, item in enumerate(thread or [], 2)]
    if first_comment:
        items.append((COMMENT, first_comment))
    shown = []
    for number, item in items:
        body, media = item.get("body") or "", list(item.get("media") or [])
        fits = fit_item(session, workspace_id, body, media, [channel], COMMENT if number == COMMENT else THREAD)
        if fits:  # the network takes it
            shown.append(FollowUpPreview(number, segments_of(body, channel.kind),
                                         known_facts(session, workspace_id, media), fits[0]))
    return tuple(shown)


def previews_for(session: Session, workspace_id: int, body: str, media, variants: dict | None,
                 channels: list[Channel], thread=None, first_comment=None) -> list[NetworkPreview]:
    """Each target's preview of the post as typed (``media`` and each variant's and item's media: library ids),
    with its thread (items ``{"body", "media"}``) and first comment where its network takes them."""
    fits = fit_on_targets(session, workspace_id, body, channels, media, variants)
    previews = []
    for channel, fit in zip(channels, fits):
        text, items = content_of(body or "", media, variants, channel.name)
        name, handle, avatar = _account(channel)
        previews.append(NetworkPreview(
            channel=channel, network=shown_for(channel.kind).network, account_name=name, account_handle=handle,
            avatar=avatar, segments=segments_of(text, channel.kind), media=known_facts(session, workspace_id, items),
            fit=fit, tailored=channel.name in (variants or {}),
            follow_ups=_follow_ups(session, workspace_id, channel, thread, first_comment)))
    return previews
