"""What each API change needs, in one place: the permission a token's member must hold.

Reads need ``read``, which every role holds. A change needs ``compose`` unless it is listed
here: a reviewer's token may approve, review, comment and look after its own tokens, and
nothing else. Finer rules (an ops-only cancel, the admin's retry, an author's own approval)
are the domain's, checked by the operation itself.
"""

from models.accounts.permissions import Permission

READS = frozenset({"GET", "HEAD", "OPTIONS"})

CHANGE_NEEDS: dict[str, Permission] = {
    "api_posts.approve": Permission.APPROVE,
    "api_post_review.request_changes": Permission.REVIEW,
    "api_post_review.add_comment_route": Permission.COMMENT,
    # The domain says who: an admin, a reviewer, or the author while outside approval is on.
    "api_post_review.create_link": Permission.APPROVE,
    "api_post_review.revoke_link_route": Permission.APPROVE,
    "api_tokens.revoke": Permission.OWN_ACCOUNT,
    "api_workspace.update": Permission.ADMINISTER,
    # A channel's posting times shape every marketer's queue (models/posts/access.py).
    "api_channels.put_slots": Permission.OPERATE,
}


def permission_for(method: str, endpoint: str | None) -> Permission:
    """The permission a request with this method to this endpoint needs."""
    if method in READS:
        return Permission.READ
    return CHANGE_NEEDS.get(endpoint or "", Permission.COMPOSE)
