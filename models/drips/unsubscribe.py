"""The unsubscribe link every drip email carries, and the headers that announce it (RFC 2369, RFC 8058).

The link is ``{TICKWORK_BASE_URL}/unsubscribe/<workspace id>/<token>``. The token is the
contact's id signed with itsdangerous, under a key derived from the app's secret for this
purpose only and a salt naming the workspace: it does not expire (a link in an old email must
still work), it cannot be forged or altered, and a token made for one workspace does not
verify in another. A refusal never says whether a contact exists.

The public route (``webapp/views/drip_public.py``) unsubscribes on ``POST`` at once (one-click,
RFC 8058: no session, no CSRF token; mail providers post ``List-Unsubscribe=One-Click``), and
on ``GET`` only shows a page with a button: mail scanners follow links, and a followed link
must change nothing.
"""

from urllib.parse import quote

from itsdangerous import BadSignature, URLSafeSerializer

from models.core.secrets_box import SecretBox

PATH = "/unsubscribe/{workspace_id}/{token}"
ONE_CLICK = "List-Unsubscribe=One-Click"
_PURPOSE = "drip unsubscribe links"


def _serializer(box: SecretBox, workspace_id: int) -> URLSafeSerializer:
    return URLSafeSerializer(box.derive_key(_PURPOSE), salt=f"tickwork unsubscribe workspace {workspace_id}")


def unsubscribe_token(box: SecretBox, workspace_id: int, contact_id: int) -> str:
    """The token of ``contact_id``'s link in ``workspace_id``; the same every time."""
    return _serializer(box, workspace_id).dumps(contact_id)


def contact_of_token(box: SecretBox, workspace_id: int, token: str) -> int | None:
    """The contact a token names, if it was made by us for this workspace; None for anything else."""
    if not isinstance(token, str) or len(token) > 200:
        return None
    try:
        contact_id = _serializer(box, workspace_id).loads(token)
    except BadSignature:
        return None
    return contact_id if isinstance(contact_id, int) and not isinstance(contact_id, bool) and contact_id > 0 else None


def unsubscribe_url(base_url: str, box: SecretBox, workspace_id: int, contact_id: int) -> str:
    """The contact's one-click unsubscribe link under ``base_url`` (TICKWORK_BASE_URL)."""
    token = unsubscribe_token(box, workspace_id, contact_id)
    return base_url.rstrip("/") + PATH.format(workspace_id=workspace_id, token=token)


def list_unsubscribe_headers(url: str, mailbox: str | None = None) -> dict[str, str]:
    """``List-Unsubscribe`` (the link, and a ``mailto`` only when the channel names a mailbox) and
    ``List-Unsubscribe-Post`` for one-click (RFC 8058)."""
    targets = [f"<{url}>"]
    if mailbox:
        targets.append(f"<mailto:{mailbox}?subject={quote('unsubscribe')}>")
    return {"List-Unsubscribe": ", ".join(targets), "List-Unsubscribe-Post": ONE_CLICK}
