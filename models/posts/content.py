"""What a post sends to each of its targets: the target's variant where it has one, else the main body and media.

A post has a main body and media; ``posts.variants`` may give a target (by channel name) its own
``{"body": ..., "media": [...]}``. A variant replaces what it names and keeps the rest: a variant
with a body only sends that body with the main media; ``"media": []`` sends no media there. The
save's checks, the composer's counters and previews, and the row the reconciler keeps for the
target all ask :func:`content_for`, so what is checked and shown is what is sent.

A variant replaces the post's head only. A thread's items and the first comment are shared: every
target that takes a thread sends the same items, every target that takes comments the same
comment (:mod:`models.posts.threads`). A network that needs a shorter reply gets the items
written to fit it (the save holds each item to every replying target's rules); per-network
threads would be a thread per variant, which no one has asked for yet.
"""

from models.posts.tables import Post

VARIANT_FIELDS = ("body", "media")


def variant_of(post: Post, channel_name: str) -> dict | None:
    """The target's variant as stored, or None when it sends the main body and media."""
    variant = (post.variants or {}).get(channel_name)
    return variant if isinstance(variant, dict) else None


def content_for(post: Post, channel_name: str) -> tuple[str, list[int]]:
    """``(body, media)`` that go to the target ``channel_name``: its variant's where it has them, else the main ones."""
    return content_of(post.body, post.media, post.variants, channel_name)


def content_of(body: str, media, variants: dict | None, channel_name: str) -> tuple[str, list]:
    """:func:`content_for` of a post not yet saved (the composer's typing, the save's checks)."""
    variant = (variants or {}).get(channel_name)
    if not isinstance(variant, dict):
        variant = {}
    chosen_body = variant["body"] if variant.get("body") is not None else body
    chosen_media = variant["media"] if variant.get("media") is not None else media
    return chosen_body, list(chosen_media or [])
