"""Where a request may send the browser next: a path on this site, never another site.

A redirect target that comes from the request (``next=`` on the sign-in page, a form's
``next`` field) goes through :func:`same_site_path` and nowhere else, so an open redirect
cannot creep back in one view at a time.
"""

import re
from urllib.parse import unquote, urlsplit

MAX_TARGET = 2048
# Control characters and whitespace: browsers strip or fold some of them (``/\t/evil.test``
# becomes ``//evil.test``), so a path carrying any of them is not trusted.
_UNSAFE_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]")
# Percent-encoding can hide ``//`` or ``\`` behind one or more rounds of decoding.
_DECODING_ROUNDS = 3


def _plainly_same_site(path: str) -> bool:
    if not path.startswith("/") or path.startswith("//") or _UNSAFE_CHARACTERS.search(path):
        return False
    parts = urlsplit(path)
    return not parts.scheme and not parts.netloc


def same_site_path(target: object) -> str | None:
    """``target`` when it is a path on this site (``/queue?status=failed``), else None.

    Refused: anything not starting with one ``/`` (``https:...``, ``javascript:...``,
    ``evil.test``), a protocol-relative ``//evil.test``, ``/\\evil.test`` (browsers read the
    backslash as a slash), control characters and whitespace, and each of these hidden
    behind percent-encoding (``%2F%2Fevil.test``, ``/%5Cevil.test``, ``/%252F/evil.test``).
    """
    if not isinstance(target, str) or not target or len(target) > MAX_TARGET:
        return None
    try:
        target.encode("utf-8")  # a lone surrogate cannot go into a Location header
    except UnicodeEncodeError:
        return None
    decoded = target
    for _ in range(_DECODING_ROUNDS + 1):
        if not _plainly_same_site(decoded):
            return None
        try:
            once_more = unquote(decoded, errors="strict") if "%" in decoded else decoded
        except UnicodeDecodeError:
            return None  # encoded bytes that are not UTF-8 are no path of ours
        if once_more == decoded:
            return target
        decoded = once_more
    return None  # still encoded after every round: not worth the risk
