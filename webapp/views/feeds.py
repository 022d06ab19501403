"""The iCalendar feed: a secret ``.ics`` address per person and workspace, and the calendar page's panel for it.

| route | who | what |
|---|---|---|
| ``GET /calendar/feed/<token>.ics`` | public: the token is the proof (see :mod:`webapp.public`) | the feed; a wrong or revoked token answers 404 |
| ``POST /calendar/feed`` | any member | a new address (the previous one stops working), shown once |
| ``POST /calendar/feed/revoke`` | any member | the address stops working |

The address lives under ``TICKWORK_BASE_URL``; without it no address is made, and a feed
asked for answers 404. What the feed holds is :mod:`models.overview.feed`'s.
"""

from urllib.parse import urlsplit

from flask import Blueprint, Response, render_template, request, url_for
from flask_login import login_required

from models.accounts.feeds import find_feed_token, issue_feed_token, live_feed_token, revoke_feed_tokens
from models.accounts.tables import Workspace
from models.core.database import db, read_session, write_session
from models.core.errors import Conflict
from models.core.runtime import runtime
from models.overview.feed import build_feed, render_ics
from models.timing.wall_time import InvalidTimezone
from webapp.drip_runtime import base_url
from webapp.views.context import Viewer, is_htmx, viewer

bp = Blueprint("feeds", __name__)

NO_FEED = "No calendar feed at this address. It may have been revoked or replaced; make a new one on the calendar page."
# Where each kind of feed event links to in the dashboard: the endpoint and its id argument.
LINKS = {"post": ("posts.edit", "post_id"), "rule": ("recurring.detail", "rule_id"),
         "action": ("actions.detail", "action_id"), "campaign": ("campaigns.detail", "campaign_id")}


def _public(path: str) -> str:
    """``path`` (as url_for made it) under TICKWORK_BASE_URL, which already says where Tickwork is mounted."""
    return base_url().rstrip("/") + path[len(request.script_root):]


def feed_address(raw: str) -> str:
    """The public address of the feed whose token is ``raw``."""
    return _public(url_for("feeds.feed", token=raw))


def feed_panel(v: Viewer, *, address: str | None = None, message: str | None = None,
               message_kind: str = "ok") -> dict:
    """What the calendar page's feed panel shows: whether a feed is live, and a new address once."""
    live = live_feed_token(db.session, v.workspace.id, v.user.id)
    return dict(v=v, live=live, address=address, message=message, message_kind=message_kind, base_url=base_url())


def _panel(v: Viewer, status: int = 200, **context):
    panel = feed_panel(v, **context)
    template = "calendar/_feed_panel.html" if is_htmx() else "calendar/feed.html"
    return render_template(template, **panel), status


@bp.post("/calendar/feed")
@login_required
def make_feed():
    """Make this person's feed address for this workspace (any earlier one stops working); shown once."""
    v = viewer()
    if not base_url():
        error = Conflict("Calendar feeds need TICKWORK_BASE_URL, the public address of this Tickwork; ask whoever "
                         "runs it to set it.", code="base_url_missing")
        return _panel(v, status=error.status, message=error.message, message_kind="error")
    with write_session() as session:
        raw = issue_feed_token(session, v.workspace.id, v.user.id, now=runtime().now())
    return _panel(v, address=feed_address(raw))


@bp.post("/calendar/feed/revoke")
@login_required
def revoke_feed():
    """Stop this person's feed address for this workspace from working."""
    v = viewer()
    with write_session() as session:
        revoked = revoke_feed_tokens(session, v.workspace.id, v.user.id, now=runtime().now(), why="revoked")
    return _panel(v, message="Feed address revoked: calendar apps subscribed to it get nothing more."
                  if revoked else "There was no feed address to revoke.")


def _link(kind: str, ref: int) -> str:
    endpoint, argument = LINKS[kind]
    return _public(url_for(endpoint, **{argument: ref}))


@bp.get("/calendar/feed/<token>.ics")
def feed(token: str):
    """The workspace's calendar as iCalendar, for the person whose live token is in the address."""
    if not base_url():
        return Response(NO_FEED, 404, mimetype="text/plain")
    rt = runtime()
    with read_session() as session:
        found = find_feed_token(session, token)
        if found is None:
            return Response(NO_FEED, 404, mimetype="text/plain")
        workspace = session.get(Workspace, found.workspace_id)
        try:
            built = build_feed(session, workspace.id, workspace.name, workspace.timezone, now=rt.now(),
                               policy=rt.policy)
        except InvalidTimezone as exc:
            return Response(f"This workspace's time zone is not valid ({exc}); an admin can set it on the "
                            "settings page.", 409, mimetype="text/plain")
    body = render_ics(built, host=urlsplit(base_url()).hostname, link=_link, now=rt.now())
    response = Response(body, 200, mimetype="text/calendar")
    response.headers["Content-Disposition"] = 'inline; filename="tickwork.ics"'
    response.headers["Cache-Control"] = "private, max-age=300"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
