"""The posts page: every post with each target's state and, once published, the network's link to it;
searched by text and filtered by channel, author, status, a target's state and wall dates.

The rules live in :mod:`models.posts.listing`; this view reads the filter bar (a bad value is dropped
and said in words, never a 500), asks for one page, and renders it (the results alone for htmx).
"""

from dataclasses import dataclass
from urllib.parse import urlencode

from flask import Blueprint, render_template, request
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.channels.tables import Channel
from models.core.database import db
from models.core.errors import InvalidInput
from models.core.time_input import parse_day
from models.posts.listing import POST_STATUSES, TARGET_STATES, PostFilter, find_posts, post_authors, target_states
from models.posts.reading import post_cursor, read_post_cursor
from webapp.views.context import is_htmx, require, viewer
from webapp.views.filters import channel_filter

bp = Blueprint("post_list", __name__)

PAGE_SIZE = 50
FILTER_KEYS = ("q", "channel", "author", "status", "state", "from", "to")
# How the list names a target's state: "published" is what went out.
STATE_WORDS = {"published": "sent", "none": "not queued yet", "submitted": "sending"}
NETWORKS = {"mastodon": "Mastodon", "bluesky": "Bluesky", "x": "X", "linkedin": "LinkedIn", "facebook": "Facebook",
            "threads": "Threads", "instagram": "Instagram", "discord": "Discord", "slack": "Slack",
            "telegram": "Telegram"}


@dataclass
class ParsedPostFilter:
    wanted: PostFilter
    values: dict  # what the form shows, as typed
    after: tuple | None
    problem: str | None

    def query(self, **extra) -> str:
        pairs = {k: v for k, v in self.values.items() if v}
        pairs.update({k: v for k, v in extra.items() if v})
        return urlencode(pairs)


def parse_post_filter(args, v, authors) -> ParsedPostFilter:
    """Read the filter bar; every bad value is dropped and reported."""
    values = {key: (args.get(key) or "").strip()[:200] for key in FILTER_KEYS}
    problems = []
    channel_id = channel_filter(values, v, problems)
    author_id = None
    if values["author"]:
        author_id = next((user.id for user in authors if str(user.id) == values["author"]), None)
        if author_id is None:
            problems.append("No such author among this workspace's posts.")
            values["author"] = ""
    if values["status"] and values["status"] not in POST_STATUSES:
        problems.append(f"Unknown status {values['status']!r}.")
        values["status"] = ""
    if values["state"] and values["state"] not in TARGET_STATES:
        problems.append(f"Unknown target state {values['state']!r}.")
        values["state"] = ""
    days = {}
    for key in ("from", "to"):
        try:
            days[key] = parse_day(values[key], key) if values[key] else None
        except InvalidInput as error:
            problems.append(error.message)
            values[key] = ""
            days[key] = None
    after = None
    if args.get("cursor"):
        try:
            after = read_post_cursor(args.get("cursor"))
        except InvalidInput:
            problems.append("That page link is out of date; showing the first page.")
    wanted = PostFilter(text=values["q"] or None, channel_id=channel_id, author_id=author_id,
                        statuses=(values["status"],) if values["status"] else (), target_state=values["state"] or None,
                        start=days["from"], end=days["to"])
    return ParsedPostFilter(wanted=wanted, values=values, after=after, problem=" ".join(problems) or None)


@bp.get("/posts")
@require(Permission.READ)
def index():
    """Every post, newest first, with each target's state and the network's link once it went out."""
    v = viewer()
    session = db.session
    authors = post_authors(session, v.workspace.id)
    parsed = parse_post_filter(request.args, v, authors)
    found = find_posts(session, v.workspace.id, parsed.wanted, after=parsed.after, limit=PAGE_SIZE + 1)
    page, more = found[:PAGE_SIZE], len(found) > PAGE_SIZE
    context = dict(
        v=v, posts=page, targets=target_states(session, v.workspace.id, page), parsed=parsed, authors=authors,
        author_names={user.id: user.email for user in authors},
        channels=list(session.scalars(select(Channel.name).where(Channel.workspace_id == v.workspace.id)
                                      .order_by(Channel.name))),
        statuses=POST_STATUSES, states=TARGET_STATES, state_words=STATE_WORDS, networks=NETWORKS,
        next_cursor=post_cursor(page[-1]) if more else None,
    )
    if is_htmx():
        return render_template("posts/_list_results.html", **context)
    return render_template("posts/list.html", **context)
