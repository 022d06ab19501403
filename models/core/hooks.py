"""Where a lower floor learns about the wings above it: registries each wing fills at start-up.

A lower floor never imports a wing. It offers a hook here; each wing registers its part
when the app starts (``models.wings.install_hooks``), and the lower floor asks every
registered part in turn.

| hook             | asked by                                   | the question                                        | posts register |
|------------------|--------------------------------------------|-----------------------------------------------------|----------------|
| pre-send checks  | the clock's dispatch, inside the claim's transaction, per origin | "may these rows go?" (a stop cancels the row, or fails it as missed, instead of claiming it) | a row whose post went back to draft |
| lateness         | the tick's misfire sweep and the claim      | "does your check decide how late your rows may go?" (then the action type's window does not apply) | — |
| gauges           | the health page and ``/metrics``           | "what numbers should an operator watch?"            | posts by status |
| calendar sources | the calendar                               | "what else falls on these days?"                    | draft posts |
| zone changes     | a workspace's change of time zone          | "move what follows the workspace's zone"            | approved posts, reconciled |
| change rules     | a person's reschedule or retry of a row, per origin | "may a person do this to a row you minted?" (a refusal is raised as it is) | — |
| media users      | the media library, before it deletes an item | "what of yours that is not archived refers to this item?" | posts not archived |
| after publish    | every publish of a row (the dispatch, recovery's late success), per origin, inside the transaction that records it | "what follows this row, now that it went out?" (rows it inserts commit with the publish, or not at all) | the next item of a thread, or the first comment |
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

log = logging.getLogger("tickwork.hooks")


@dataclass(frozen=True)
class Stop:
    """A pre-send check's verdict that a row must not go, and what becomes of it instead of a claim:
    cancelled with ``cancel_kind`` (its wing withdrew it), or failed without a send with
    ``failure_code`` (it missed its window), for ``reason``. Exactly one of the two is set."""

    reason: str
    cancel_kind: str | None = None
    failure_code: str | None = None

    def __post_init__(self):
        if (self.cancel_kind is None) == (self.failure_code is None):
            raise ValueError("a stop either cancels the row or fails it, not both and not neither")


# (session, rows of one origin about to be claimed, now) -> {row id: Stop} for those that must not go.
PreSendCheck = Callable[[Any, list, datetime], dict[int, Stop]]


@dataclass(frozen=True)
class Gauge:
    """A number (or one number per label value) a wing wants on the health page and in ``/metrics``."""

    name: str  # a Prometheus metric name, tickwork_...
    help: str
    read: Callable[[Any, datetime], dict[str, float]]  # (session, now) -> {label value: number}
    label: str = "state"


@dataclass(frozen=True)
class CalendarEntry:
    """Something a wing puts on a calendar day beside the scheduled actions."""

    day: date  # the local day in the workspace's zone
    at: time  # the local time of day
    title: str
    status: str  # drawn as a status chip: draft, planned, ...
    kind: str  # what it links to, for the shell: "post", "rule", ...
    ref: int  # the id it links to


# (session, workspace id, first day, last day (inclusive), zone) -> entries on those days.
CalendarSource = Callable[[Any, int, date, date, str], list[CalendarEntry]]

# (session, workspace id, now, actor, policy) -> counts of what moved. Runs inside the
# transaction that changes the zone, after the new zone is written.
ZoneChange = Callable[[Any, int, datetime, Any, Any], dict[str, int]]

# (session, row, change) -> the refusal (a models.core.errors.DomainError) or None. ``change``
# is "reschedule" or "retry"; the rule runs inside the change's write transaction, before it.
ChangeRule = Callable[[Any, Any, str], Exception | None]

# (session, workspace id, media id) -> what refers to that media item and is not archived, in
# words a person reads ("post 12"). The library refuses to delete an item while any answer is non-empty.
MediaUsers = Callable[[Any, int, int], list[str]]

# (session, [(row just published, its provider id)], now, actor) -> the rows it inserted. Runs inside
# the transaction that records the publish, after the row moved, so what it mints commits with the
# publish or not at all; the caller hands the new rows to the queue once that transaction commits.
AfterPublish = Callable[[Any, list, datetime, Any], list]


@dataclass
class Hooks:
    """Every registered part, by hook; one instance per app, built at start-up."""

    pre_send: dict[str, list[PreSendCheck]] = field(default_factory=dict)
    # Origins whose pre-send check decides lateness itself (a recurring rule's misfire
    # policy): the tick's misfire sweep and the claim's lateness test leave their rows to it.
    lateness_decided: set[str] = field(default_factory=set)
    gauges: list[Gauge] = field(default_factory=list)
    calendar_sources: list[CalendarSource] = field(default_factory=list)
    zone_changes: dict[str, ZoneChange] = field(default_factory=dict)
    # The app's policy (a models.core.policy.Policy), for checks that obey one of its windows.
    policy: Any = None
    change_rules: dict[str, list[ChangeRule]] = field(default_factory=dict)
    media_users: list[MediaUsers] = field(default_factory=list)
    # Per origin: (which rows it follows, the follow-up); the first keeps the hot path free of those it ignores.
    after_publish: dict[str, list[tuple[Callable[[Any], bool], AfterPublish]]] = field(default_factory=dict)

    def add_pre_send_check(self, origin: str, check: PreSendCheck, *, decides_lateness: bool = False) -> None:
        """Ask ``check`` before any row of ``origin`` is claimed; with ``decides_lateness`` it alone
        judges how late those rows may go."""
        self.pre_send.setdefault(origin, []).append(check)
        if decides_lateness:
            self.lateness_decided.add(origin)

    def lateness_applies(self, origin: str) -> bool:
        """Whether the action type's maximum lateness judges a row of ``origin`` (else its wing does)."""
        return origin not in self.lateness_decided

    def add_gauge(self, gauge: Gauge) -> None:
        self.gauges.append(gauge)

    def add_calendar_source(self, source: CalendarSource) -> None:
        self.calendar_sources.append(source)

    def add_zone_change(self, wing: str, participant: ZoneChange) -> None:
        """``participant`` moves ``wing``'s part when a workspace's zone changes; its counts are reported under ``wing``."""
        self.zone_changes[wing] = participant

    def add_change_rule(self, origin: str, rule: ChangeRule) -> None:
        """Ask ``rule`` before a person reschedules or retries a row of ``origin``."""
        self.change_rules.setdefault(origin, []).append(rule)

    def add_media_users(self, users: MediaUsers) -> None:
        """Ask ``users`` what refers to a media item before the library deletes it."""
        self.media_users.append(users)

    def add_after_publish(self, origin: str, follow: AfterPublish,
                          concerns: Callable[[Any], bool] = lambda row: True) -> None:
        """Ask ``follow`` in the transaction that records a row of ``origin`` published, for the rows ``concerns``
        (a test of the row alone, no database) says it follows."""
        self.after_publish.setdefault(origin, []).append((concerns, follow))

    def published(self, session, rows: list, now: datetime, actor) -> list:
        """Tell the wings that ``rows`` (``(row, provider id)`` pairs) were just recorded published, in that
        transaction; the rows they inserted in answer."""
        inserted: list = []
        for origin, follows in self.after_publish.items():
            for concerns, follow in follows:
                of_origin = [(row, provider_id) for row, provider_id in rows if row.origin == origin and concerns(row)]
                if not of_origin:
                    continue
                try:
                    with session.begin_nested():
                        inserted += follow(session, of_origin, now, actor)
                except Exception:
                    # The send happened: its publish stays recorded whatever a wing's follow-up does. What did
                    # not follow is said here, and shows on the wing's own page as still waiting.
                    log.exception("after publishing %s, %s failed; the publish stands",
                                  ", ".join(f"action {row.id}" for row, _ in of_origin), getattr(follow, "__name__", follow))
        return inserted

    def users_of_media(self, session, workspace_id: int, media_id: int) -> list[str]:
        """Everything not archived that refers to media item ``media_id``, from every wing."""
        return [user for users in self.media_users for user in users(session, workspace_id, media_id)]

    def refusal(self, session, row, change: str) -> Exception | None:
        """Why a person may not make ``change`` to ``row``, from the rules of its origin; None when they may."""
        for rule in self.change_rules.get(row.origin, ()):
            refused = rule(session, row, change)
            if refused is not None:
                return refused
        return None

    def stops(self, session, rows: list, now: datetime) -> dict[int, Stop]:
        """The rows among ``rows`` that a registered check says must not go, with why."""
        by_origin: dict[str, list] = {}
        for row in rows:
            if row.origin in self.pre_send:
                by_origin.setdefault(row.origin, []).append(row)
        stopped: dict[int, Stop] = {}
        for origin, of_origin in by_origin.items():
            for check in self.pre_send[origin]:
                stopped.update(check(session, [row for row in of_origin if row.id not in stopped], now))
        return stopped
