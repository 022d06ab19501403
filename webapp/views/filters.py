"""The filter bar shared by the queue and failures pages: query string in, ActionFilter out."""

from dataclasses import dataclass
from datetime import time, timedelta
from urllib.parse import urlencode

from sqlalchemy import select

from models.actions.filters import ActionFilter
from models.channels.tables import Channel
from models.core.database import db
from models.core.errors import InvalidInput
from models.actions.reading import read_action_cursor
from models.core.time_input import parse_day, resolve_typed
from models.posts.listing import POST_STATUSES, post_authors, rows_of_matching_posts

FILTER_KEYS = ("status", "type", "channel", "from", "to", "q", "reason", "cancelled", "author", "review")


@dataclass
class ParsedFilter:
    wanted: ActionFilter
    values: dict  # what the form shows, as typed
    after: tuple | None
    problem: str | None  # a bad field, said in words; the page still renders

    def query(self, **extra) -> str:
        """The filters as a query string, for links and bulk forms."""
        pairs = {k: v for k, v in self.values.items() if v}
        pairs.update({k: v for k, v in extra.items() if v})
        return urlencode(pairs)


def _local_midnight(raw: str, zone: str, field: str, *, plus_days: int = 0):
    """The instant the typed local day (plus ``plus_days``) begins in ``zone``."""
    return resolve_typed(parse_day(raw, field) + timedelta(days=plus_days), time(0, 0), zone, field).instant


@dataclass
class PostFilters:
    """The author and review state asked of the rows' posts (the queue's and the calendar's filters)."""

    author_id: int | None
    review: str | None
    problems: list

    def condition(self, workspace_id: int):
        """The SQL condition on ``scheduled_actions`` for these, or None when none was asked."""
        return rows_of_matching_posts(workspace_id, author_id=self.author_id,
                                      statuses=(self.review,) if self.review else ())


def parse_post_filters(values: dict, v) -> PostFilters:
    """Read ``author`` (a post author's id) and ``review`` (a post status) from ``values``, dropping a bad one."""
    problems = []
    author_id = None
    if values.get("author"):
        author_id = next((user.id for user in post_authors(db.session, v.workspace.id)
                          if str(user.id) == values["author"]), None)
        if author_id is None:
            problems.append("No such author among this workspace's posts.")
            values["author"] = ""
    review = values.get("review") or None
    if review is not None and review not in POST_STATUSES:
        problems.append(f"Unknown review state {review!r}.")
        values["review"], review = "", None
    return PostFilters(author_id=author_id, review=review, problems=problems)


def channel_filter(values: dict, v, problems: list) -> int | None:
    """The id of the channel the filter bar names in ``values["channel"]``; an unknown name is dropped and
    reported in ``problems``."""
    if not values["channel"]:
        return None
    channel_id = db.session.scalar(
        select(Channel.id).where(Channel.workspace_id == v.workspace.id, Channel.name == values["channel"]))
    if channel_id is None:
        problems.append(f"No channel named {values['channel']!r}.")
        values["channel"] = ""
    return channel_id


def parse_filter(args, v, *, allowed: tuple[str, ...], default: tuple[str, ...]) -> ParsedFilter:
    """Read the filter bar; a bad value is dropped and reported, never a 500."""
    values = {key: (args.get(key) or "").strip()[:200] for key in FILTER_KEYS}
    problems = []
    statuses = default
    if values["status"]:
        if values["status"] in allowed:
            statuses = (values["status"],)
        else:
            problems.append(f"Unknown status {values['status']!r}.")
            values["status"] = ""
    channel_id = channel_filter(values, v, problems)
    start = end = None
    try:
        if values["from"]:
            start = _local_midnight(values["from"], v.zone, "from")
    except InvalidInput as exc:
        problems.append(exc.message)
        values["from"] = ""
    try:
        if values["to"]:
            end = _local_midnight(values["to"], v.zone, "to", plus_days=1)
    except InvalidInput as exc:
        problems.append(exc.message)
        values["to"] = ""
    after = None
    cursor = args.get("cursor")
    if cursor:
        try:
            after = read_action_cursor(cursor)
        except InvalidInput:
            problems.append("That page link is out of date; showing the first page.")
    of_posts = parse_post_filters(values, v)
    problems += of_posts.problems
    condition = of_posts.condition(v.workspace.id)
    wanted = ActionFilter(
        statuses=statuses, action_type=values["type"] or None, channel_id=channel_id, start=start, end=end,
        text=values["q"] or None, failure_code=values["reason"] or None,
        where=(condition,) if condition is not None else (),
    )
    return ParsedFilter(wanted=wanted, values=values, after=after, problem=" ".join(problems) or None)
