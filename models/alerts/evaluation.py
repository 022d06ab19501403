"""One pass of the alert rules: read what holds, then fire, remind and resolve, each in its own short transaction.

A pass processes everything that holds now, so it is idempotent, and it takes its
exclusivity from the database, never from the queue: raising an alert is an INSERT one
transaction wins (the open-alert unique index), each reminder and resolution a guarded
UPDATE (:mod:`models.alerts.lifecycle`), and each message is sent by the winner's
transaction only. Two evaluators racing (two consumers, a consumer and a web process's
check) therefore send every message once.

The ``alerts`` clock job runs every rule each minute; each web process's check runs the
rules about the engine itself (:data:`~models.alerts.rules.ENGINE_RULES`) on its own, since
the consumers that run the clock may be what stopped, and sends their alerts directly.
"""

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select

from models.alerts import lifecycle
from models.alerts.delivery import (
    FIRED, REMINDER, RESOLVED, DirectDestination, deliver, direct_claims, message_for, send_direct,
)
from models.alerts.digest import send_digests
from models.alerts.rules import RULES, Context, Finding, RuleSettings, apply_settings
from models.alerts.tables import INSTANCE, OPEN_STATES, Alert, AlertRuleSetting, AlertState
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.timing.clock import Clock

log = logging.getLogger("tickwork.alerts")

KIND = "alerts"


@dataclass
class AlertConfig:
    """The operator's side of alerting: rule settings over the defaults, and where instance alerts go directly."""

    rules: dict[str, RuleSettings] = field(default_factory=dict)
    direct: list[DirectDestination] = field(default_factory=list)
    base_url: str | None = None
    timeout: float = 30.0
    http: object = None  # an egress HTTP client for the webhook destination


class Settings:
    """A rule's settings for a workspace (or the instance): the defaults, the operator's, the workspace's own."""

    def __init__(self, session, operator: dict[str, RuleSettings]):
        self.operator = operator
        self.own = {(row.workspace_id, row.rule): row for row in session.scalars(select(AlertRuleSetting))}

    def __call__(self, rule: str, workspace_id: int | None) -> RuleSettings:
        settings = self.operator.get(rule, RULES[rule].defaults)
        row = self.own.get((workspace_id, rule)) if workspace_id is not None else None
        if row is None:
            return settings
        return apply_settings(settings, {"threshold": row.threshold, "window": row.window_seconds,
                                         "cooldown": row.cooldown_seconds, "enabled": row.enabled}, rule)


def summary_item(alert: Alert) -> dict:
    figures = dict(alert.figures or {})
    figures.pop("title", None)
    return {"id": alert.id, "rule": alert.rule, "subject": alert.subject, "figures": figures,
            **({"workspace_id": alert.workspace_id} if alert.workspace_id is not None else {})}


def title_of(alert: Alert) -> str:
    return (alert.figures or {}).get("title") or f"{RULES[alert.rule].title} ({alert.subject})"


def evaluate(*, clock: Clock, config: AlertConfig, job_periods: dict[str, timedelta], database_path: str | None = None,
             rules: Iterable[str] | None = None, announce: Callable = lambda rows: None, record: bool = True) -> dict:
    """One pass over ``rules`` (all by default); recorded as an ``alerts`` clock run unless ``record`` is false.

    Returns ``{"fired": [...], "resolved": [...], "firing": [...]}`` (each ``{"id", "rule",
    "subject", "figures"}``), plus ``errors`` (a rule that could not be read, by name) and
    ``direct_sent`` (messages sent around the engine).
    """
    chosen = list(rules or RULES)

    def one_pass(run_id: int | None) -> dict:
        actor = Actor.job(KIND, run_id)
        now = clock.now()
        findings, errors, evaluated = [], {}, []
        with read_session() as session:
            settings = Settings(session, config.rules)
            ctx = Context(session=session, now=now, settings=settings, job_periods=job_periods,
                          database_path=database_path)
            for name in chosen:
                rule = RULES[name]
                if rule.scope == "instance" and not settings(name, None).enabled:
                    evaluated.append(name)
                    continue
                try:
                    findings += rule.evaluate(ctx)
                except Exception as exc:  # one rule that cannot be read must not silence the others; recorded
                    log.exception("alert rule %s could not be evaluated", name)
                    errors[name] = f"{type(exc).__name__}: {exc}"[:500]
                    continue
                evaluated.append(name)
        fired, firing, resolved, rows = [], [], [], []
        held = set()
        for finding in findings:
            held.add((finding.scope, finding.rule, finding.subject[:128]))
            with write_session() as session:
                alert, is_new, sent = _hold(session, finding, settings, now=now, actor=actor, base_url=config.base_url)
                rows += sent
                (fired if is_new else firing).append(summary_item(alert))
        with read_session() as session:
            still_open = list(session.scalars(select(Alert).where(Alert.state.in_(OPEN_STATES),
                                                                  Alert.rule.in_(evaluated)).order_by(Alert.id)))
        for alert in still_open:
            if (alert.scope, alert.rule, alert.subject) in held:
                continue
            if not RULES[alert.rule].covers(ctx, alert.subject):
                continue
            with write_session() as session:
                moved = lifecycle.resolve(session, alert.id, now=now)
                if moved.ok:
                    message = message_for(moved.row, RESOLVED, title=title_of(moved.row), base_url=config.base_url)
                    rows += deliver(session, moved.row, message, now=now, actor=actor).actions
                    resolved.append(summary_item(moved.row))
        if record:  # the clock job only: the web processes' check of the engine sends no digest
            with write_session() as session:
                rows += send_digests(session, now=now, actor=actor, base_url=config.base_url)
        announce(rows)
        direct = send_owed_direct(config, now=now) if config.direct else 0
        summary = {"fired": fired, "resolved": resolved, "firing": firing, "direct_sent": direct}
        if errors:
            summary["errors"] = errors
        return summary

    if not record:
        return one_pass(None)
    return run_recorded(KIND, one_pass, clock=clock)


def _hold(session, finding: Finding, settings: Settings, *, now: datetime, actor: Actor, base_url: str | None):
    """The finding's alert, raised if none is open (and its first message sent), or reminded after its cooldown."""
    figures = {**finding.figures, "title": finding.title or RULES[finding.rule].title}
    alert = lifecycle.open_alert(session, finding.scope, finding.rule, finding.subject[:128], lock=True)
    if alert is None:
        raised = lifecycle.fire(session, scope=finding.scope, workspace_id=finding.workspace_id, rule=finding.rule,
                                subject=finding.subject, figures=figures, now=now)
        if raised.ok:
            message = message_for(raised.row, FIRED, title=figures["title"], base_url=base_url)
            return raised.row, True, deliver(session, raised.row, message, now=now, actor=actor).actions
        alert = raised.row  # another pass raised it a moment ago: it sent the first message
        if alert is None:
            return lifecycle.open_alert(session, finding.scope, finding.rule, finding.subject[:128]), False, []
    alert.figures = figures
    alert.last_seen_at = now
    session.flush()
    if alert.state != AlertState.FIRING.value:
        return alert, False, []
    cooldown = settings(finding.rule, finding.workspace_id).cooldown
    reminded = lifecycle.remind(session, alert, cooldown=cooldown, now=now)
    if not reminded.ok:
        return alert, False, []
    message = message_for(reminded.row, REMINDER, title=figures["title"], base_url=base_url)
    return reminded.row, False, deliver(session, reminded.row, message, now=now, actor=actor).actions


def owed_direct(session) -> list[Alert]:
    """Instance alerts whose latest message the operator's destinations have not been sent yet."""
    return list(session.scalars(select(Alert).where(Alert.scope == INSTANCE, or_(
        and_(Alert.state == AlertState.FIRING.value,
             or_(Alert.direct_sent_n.is_(None), Alert.direct_sent_n < Alert.notified_n)),
        and_(Alert.state == AlertState.ACKNOWLEDGED.value, Alert.direct_sent_n.is_(None)),
        and_(Alert.state == AlertState.RESOLVED.value, Alert.direct_sent_n.is_not(None),
             Alert.direct_resolved_at.is_(None)),
    )).order_by(Alert.id)))


def send_owed_direct(config: AlertConfig, *, now: datetime) -> int:
    """Send each owed direct message once: a compare-and-set on the alert row picks the one sender."""
    with read_session() as session:
        owed = owed_direct(session)
    sent = 0
    for alert in owed:
        with write_session() as session:
            kind = direct_claims(session, alert, now=now)
            current = session.get(Alert, alert.id)
        if kind is None:
            continue
        message = message_for(current, kind, title=title_of(current), base_url=config.base_url, direct=True)
        errors = send_direct(current, message, config.direct, now=now, timeout=config.timeout, http=config.http)
        with write_session() as session:
            lifecycle.record_direct_error(session, alert.id, "; ".join(errors) or None)
        sent += 1
    return sent
