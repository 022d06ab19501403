"""Soak: an hour of mixed load through `tickwork serve`, figures per minute.

    nice -n 10 .venv/bin/python bench/soak.py [--db sqlite|postgresql|both] [--pg URL] [--minutes 60]
    .venv/bin/python bench/soak.py --quick            # 2 minutes on SQLite; prints only, keeps nothing
    .venv/bin/python bench/soak.py write              # render docs/benchmarks.md "## Soak" from what was kept

On each database: `tickwork serve` as an operator starts it (a web process, one consumer, the
works consumer), a webhook receiver answering each POST after 20 ms (a process of its own,
counting any id it sees twice) and a loopback SMTP server (aiosmtpd). First the box's webhook
capacity is measured in the same run (2,000 webhooks due at once, tick to last published); then
for ``--minutes`` the load runs at half that rate:

- actions people scheduled through the API a minute or two ahead (nine in ten webhooks, one in
  ten emails), inserted each second for the second ninety seconds on: the bulk of the rate;
- posts: one every five seconds through the API, approved, due three minutes later (the
  reconciler queues their rows);
- recurring occurrences: twelve hourly rules made at the start, one falling due every five minutes;
- drip steps: a contact enrolled every second in an email campaign whose first step is
  immediate (drip-advance mints it within the minute);
- works: five works of the `log` pipeline, one run now every two minutes;
- a person on the dashboard: one page a second (queue, health, failures, calendar, outbox).

Every minute: lateness p50 / p99 of the sends that started in it (``submitted_at`` less the
row's due time; drip steps apart, as their mint runs once a minute), the consumer's RSS, the
database's size, the dashboard's p95. `--db both` runs the two databases side by side, each at
half of its own capacity measured at the start with the other one running (the whole box then
carries half its capacity), so two hours of soak fit in one.
"""

from common import ROOT, SECRET, machine, make_app, record, recorded, tickwork, when_measured, write_section

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import func, insert, select, text

import clock as bench_clock
import throughput as bench_tp

RESULTS = ROOT / "bench" / ".soak-results.json"
PASSWORD = "soak password 1"
CAPACITY_ROWS = 2000
PAGES = ("/queue", "/health", "/failures", "/calendar", "/outbox")


def _setup(app, hook_port: int, smtp_port: int) -> dict:
    """A UTC workspace, its webhook and SMTP channels, an admin with a password and an API token."""
    from models.accounts.members import add_member
    from models.accounts.tables import User, Workspace
    from models.accounts.tokens import issue_token
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        now = runtime().now()
        ws = Workspace(name="Soak", timezone="UTC", created_at=now)
        session.add(ws)
        session.flush()
        hooks = Channel(workspace_id=ws.id, name="hooks", kind="webhook", config={"url": f"http://127.0.0.1:{hook_port}/hook"},
                        created_at=now)
        mail = Channel(workspace_id=ws.id, name="mail", kind="smtp", created_at=now,
                       config={"host": "127.0.0.1", "port": smtp_port, "from": "news@example.com", "security": "none"})
        session.add_all([hooks, mail])
        add_member(session, ws.id, email="admin@soak.test", role="admin", password=PASSWORD, now=now)
        session.flush()
        user = session.scalar(select(User).where(User.email == "admin@soak.test"))
        token = issue_token(session, user, ws, now)
        return {"workspace": ws.id, "hooks": hooks.id, "mail": mail.id, "token": token}


def _insert(app, ws: int, channel: int, publish_ats: list[datetime], kind: str) -> None:
    from models.actions.tables import ScheduledAction
    from models.core.database import write_session

    now = datetime.now(timezone.utc)
    payload = ({"subject": "Bread at nine", "text": "Fresh bread at nine.", "to": "reader@example.com"}
               if kind == "smtp" else {"body": "soak"})
    with app.app_context(), write_session() as session:
        session.execute(insert(ScheduledAction), [
            dict(workspace_id=ws, action_type="send_email" if kind == "smtp" else "publish_post",
                 target_key=f"s{uuid.uuid4().hex[:12]}", channel_id=channel, payload=payload, publish_at=at,
                 status="queued", attempt_count=0, origin="person", created_at=now, updated_at=now)
            for at in publish_ats])


class Api:
    """The JSON API of the served Tickwork, with the admin's token."""

    def __init__(self, base: str, token: str):
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self.errors = 0

    def post(self, path: str, body: dict | None = None) -> dict | None:
        try:
            answer = self.client.post(path, json=body or {})
        except httpx.HTTPError:
            self.errors += 1
            return None
        if answer.status_code >= 300:
            self.errors += 1
            return None
        return answer.json()

    def put(self, path: str, body: dict) -> None:
        if self.client.put(path, json=body).status_code >= 300:
            self.errors += 1


def _features(api: Api, now: datetime) -> dict:
    """Twelve hourly rules (one due every five minutes), an active email campaign, five works on a daily schedule."""
    start = now.replace(second=0, microsecond=0) + timedelta(minutes=2)
    for i in range(12):
        at = start + timedelta(minutes=5 * i)
        api.post("/api/v1/recurring", {"action_type": "publish_post", "channel": "hooks", "target_key": f"rule-{i}",
                                       "payload": {"body": f"rule {i}"}, "rrule": "FREQ=HOURLY",
                                       "starts_local": at.strftime("%Y-%m-%dT%H:%M")})
    campaign = api.post("/api/v1/campaigns", {"name": "Welcome", "channel": "mail", "steps": [
        {"delay": "PT0S", "subject": "Welcome {{ contact.first_name }}", "body": "Hello"},
        {"delay": "P2D", "subject": "Day two", "body": "Still here?"}]})
    api.post(f"/api/v1/campaigns/{campaign['id']}/activate")
    works = []
    for i in range(5):
        work = api.post("/api/v1/works", {"name": f"Digest {i}", "pipeline": "log"})
        api.put(f"/api/works/{work['id']}/schedule", {"cadence": "daily"})
        works.append(work["id"])
    return {"campaign": campaign["id"], "works": works}


class Person:
    """Someone signed in to the dashboard, opening a page a second; the times of their pages."""

    def __init__(self, base: str):
        self.client = httpx.Client(base_url=base, timeout=60, follow_redirects=False)
        page = self.client.get("/login").text
        token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page)
        signed = self.client.post("/login", data={"email": "admin@soak.test", "password": PASSWORD,
                                                  **({"csrf_token": token.group(1)} if token else {})})
        if signed.status_code != 303:
            raise SystemExit(f"the soak's person could not sign in: {signed.status_code}")
        self.times: list[tuple[float, str, float, int]] = []  # (when, page, seconds, status)

    def visit(self, page: str) -> None:
        started = time.perf_counter()
        try:
            status = self.client.get(page).status_code
        except httpx.HTTPError:
            status = 0
        self.times.append((time.monotonic(), page, time.perf_counter() - started, status))


def _database_size(url: str) -> int:
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def _lateness(app, since: datetime, until: datetime) -> dict:
    """Lateness of the sends that started in [since, until): (submitted_at - due) for first attempts, by origin."""
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        rows = session.execute(select(ScheduledAction.origin, ScheduledAction.submitted_at, ScheduledAction.publish_at)
                               .where(ScheduledAction.submitted_at >= since, ScheduledAction.submitted_at < until,
                                      ScheduledAction.attempt_count == 1)).all()
    by: dict[str, list[float]] = {}
    for origin, submitted, due in rows:
        by.setdefault("drip" if origin == "drip" else "all", []).append((submitted - due).total_seconds())
    return by


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)


class AutovacuumOn:
    """PostgreSQL's autovacuum on for the soak, as a server in service has it, and put back as it was after.

    A server with autovacuum off never analyzes the tables the soak fills: its planner keeps the
    estimates of empty tables, so a query the dashboard bounds by an index (the health page's
    newest claims) is planned as a scan of the whole history, and dead rows are never reclaimed.
    An hour of that measures the server's configuration, not the engine."""

    def __init__(self, pg_admin: str):
        self.pg_admin, self.was = pg_admin, None

    def __enter__(self):
        with psycopg.connect(self.pg_admin, autocommit=True) as conn:
            self.was = conn.execute("SHOW autovacuum").fetchone()[0]
            if self.was != "on":
                conn.execute("ALTER SYSTEM SET autovacuum = on")
                conn.execute("SELECT pg_reload_conf()")
        return self

    def __exit__(self, *exc):
        if self.was != "on":
            with psycopg.connect(self.pg_admin, autocommit=True) as conn:
                conn.execute("ALTER SYSTEM RESET autovacuum")
                conn.execute("SELECT pg_reload_conf()")


def soak(db: str, pg_admin: str | None, minutes: float, workdir: Path) -> dict:
    if db != "postgresql":
        return _soak(db, pg_admin, minutes, workdir)
    with AutovacuumOn(pg_admin) as autovacuum:
        result = _soak(db, pg_admin, minutes, workdir)
    result["autovacuum"] = "on" if autovacuum.was == "on" else f"turned on for the run (the server had {autovacuum.was})"
    return result


def _soak(db: str, pg_admin: str | None, minutes: float, workdir: Path) -> dict:
    database_url = bench_clock.fresh_database(db, pg_admin, workdir)
    queue_url = bench_clock.queue_url_for(db, database_url, workdir)
    here = workdir / db
    here.mkdir()
    hook, hook_port, hook_out = bench_tp.start_receiver("webhook", here, 0.02)
    smtp, smtp_port, smtp_out = bench_tp.start_receiver("smtp", here, 0)
    serve = None
    try:
        app = make_app(database_url, frozen_at=None)
        ids = _setup(app, hook_port, smtp_port)
        web_port = bench_tp.free_port()
        base = f"http://127.0.0.1:{web_port}"
        log = workdir / f"serve-{db}.log"
        env = bench_clock.env_for(database_url, queue_url)
        env["TICKWORK_BASE_URL"] = base
        with open(log, "w") as handle:
            serve = subprocess.Popen(tickwork("serve", "--host", "127.0.0.1", "--port", str(web_port)), cwd=ROOT,
                                     stdout=handle, stderr=handle, env=env)
        pid = bench_tp.consumer_pid(log)
        _wait_up(base)
        # The box's webhook capacity, in this run: 2,000 due at once, handed over by `tickwork tick`, from the
        # first claim to the last outcome (the command's start-up does not count).
        _insert(app, ids["workspace"], ids["hooks"], [datetime.now(timezone.utc) - timedelta(seconds=1)] * CAPACITY_ROWS,
                "webhook")
        started = time.monotonic()
        subprocess.run(tickwork("tick"), cwd=ROOT, env=env, capture_output=True, check=True)
        while bench_clock.count(app, "published") < CAPACITY_ROWS:
            if time.monotonic() - started > 600:
                raise SystemExit(f"{db}: the capacity run did not finish in 10 minutes")
            time.sleep(0.1)
        capacity = CAPACITY_ROWS / _send_span(app)
        rate = capacity / 2
        api = Api(base, ids["token"])
        features = _features(api, datetime.now(timezone.utc))
        person = Person(base)
        result = _load(app, api, person, ids, features, rate, minutes, pid, database_url)
        result.update(db=db, capacity_per_s=round(capacity, 1), rate_per_s=round(rate, 1),
                      rate_per_min=round(rate * 60))
        # Let the last minute's rows go out, then count what the receivers saw.
        deadline = time.monotonic() + 300
        left = _due_left(app)
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = _due_left(app)
        result["statuses"] = _statuses(app)
        result["due_left"] = left
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=120)
        received = bench_tp.stop_receiver(hook, hook_out)
        mailed = bench_tp.stop_receiver(smtp, smtp_out)
        bench_clock.drop_database(database_url, pg_admin)
    result["webhooks_received"] = received
    result["emails_received"] = mailed["received"]
    return result


def _send_span(app) -> float:
    """Seconds from the first claim to the last outcome among the rows sent so far."""
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        first, last = session.execute(select(func.min(ScheduledAction.submitted_at),
                                             func.max(ScheduledAction.finished_at))).one()
    return max((last - first).total_seconds(), 0.001)


def _wait_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("tickwork serve's web process did not come up")


def _due_left(app) -> int:
    from models.actions.tables import ScheduledAction, queued_and_due_by
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(ScheduledAction).where(
            queued_and_due_by(datetime.now(timezone.utc)))) + session.scalar(
            select(func.count()).select_from(ScheduledAction).where(ScheduledAction.status == "submitted"))


def _statuses(app) -> dict:
    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return {f"{status}:{code or ''}".rstrip(":"): n for status, code, n in session.execute(
            select(ScheduledAction.status, ScheduledAction.failure_code, func.count())
            .group_by(ScheduledAction.status, ScheduledAction.failure_code))}


def _load(app, api: Api, person: Person, ids: dict, features: dict, rate: float, minutes: float, pid: int,
          database_url: str) -> dict:
    """The mixed load at ``rate`` sends a second for ``minutes``, sampled every minute."""
    stop = threading.Event()
    # Per second: posts 0.2, drip steps 1, recurring 1/300, works 1/120; the rest are the people's actions.
    bulk = max(rate - 0.2 - 1 - 1 / 300, 1.0)
    counts = {"actions": 0, "posts": 0, "enrollments": 0, "work_runs": 0}

    def generate():
        second = 0
        carry = 0.0
        while not stop.is_set():
            began = time.monotonic()
            now = datetime.now(timezone.utc)
            carry += bulk
            n, carry = int(carry), carry - int(carry)
            due = [now + timedelta(seconds=90 + i / max(n, 1)) for i in range(n)]
            mail = due[::10]
            hooks = [at for i, at in enumerate(due) if i % 10]
            if hooks:
                _insert(app, ids["workspace"], ids["hooks"], hooks, "webhook")
            if mail:
                _insert(app, ids["workspace"], ids["mail"], mail, "smtp")
            counts["actions"] += n
            if second % 5 == 0:
                post = api.post("/api/v1/posts", {"body": f"Soak post {second}", "targets": ["hooks"],
                                                  "local_time": (now + timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M")})
                if post and api.post(f"/api/v1/posts/{post['id']}/approve") is not None:
                    counts["posts"] += 1
            contact = api.post("/api/v1/contacts", {"email": f"c{second}-{uuid.uuid4().hex[:6]}@example.com",
                                                    "name": "Ann Reader"})
            if contact and api.post(f"/api/v1/campaigns/{features['campaign']}/enrollments",
                                    {"contact_id": contact["id"]}) is not None:
                counts["enrollments"] += 1
            if second % 120 == 60:
                work = features["works"][(second // 120) % len(features["works"])]
                if api.post(f"/api/works/{work}/schedule/run") is not None:
                    counts["work_runs"] += 1
            second += 1
            stop.wait(max(0.0, 1.0 - (time.monotonic() - began)))

    def browse():
        turn = 0
        while not stop.is_set():
            began = time.monotonic()
            person.visit(PAGES[turn % len(PAGES)])
            turn += 1
            stop.wait(max(0.0, 1.0 - (time.monotonic() - began)))

    threads = [threading.Thread(target=generate, daemon=True), threading.Thread(target=browse, daemon=True)]
    for thread in threads:
        thread.start()
    per_minute = []
    begun = datetime.now(timezone.utc)
    began = time.monotonic()
    try:
        for minute in range(int(minutes) or 1):
            time.sleep(max(0.0, began + 60 * (minute + 1) - time.monotonic()) if minutes >= 1 else minutes * 60)
            now = datetime.now(timezone.utc)
            late = _lateness(app, now - timedelta(minutes=1), now)
            window = [seconds for when, _, seconds, _ in person.times if when >= time.monotonic() - 60]
            per_minute.append({"minute": minute + 1, "sent": len(late.get("all", [])) + len(late.get("drip", [])),
                               "p50": _pct(late.get("all", []), 0.5), "p99": _pct(late.get("all", []), 0.99),
                               "drip_p99": _pct(late.get("drip", []), 0.99),
                               "rss_mib": round(bench_clock.rss_kib(pid) / 1024, 1),
                               "db_mib": round(_database_size(database_url) / 2**20, 1),
                               "dashboard_p95_ms": round((_pct(window, 0.95) or 0) * 1000),
                               "load": round(os.getloadavg()[0], 1)})
            print(json.dumps(per_minute[-1]), flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    pages = [seconds for _, _, seconds, status in person.times]
    bad_pages = sum(1 for *_, status in person.times if status != 200)
    late_all = [m["p99"] for m in per_minute if m["p99"] is not None]
    warm = per_minute[min(4, len(per_minute) - 1)]["rss_mib"]
    return {"bench": "soak", "minutes": minutes, "began": begun.strftime("%Y-%m-%d %H:%M UTC"),
            "per_minute": per_minute, "generated": counts, "api_errors": api.errors,
            "dashboard_requests": len(pages), "dashboard_bad": bad_pages,
            "dashboard_p95_ms": round((_pct(pages, 0.95) or 0) * 1000),
            "dashboard_p50_ms": round((_pct(pages, 0.5) or 0) * 1000),
            "lateness_p99_worst_minute": max(late_all) if late_all else None,
            "lateness_p99_median_minute": round(statistics.median(late_all), 3) if late_all else None,
            "rss_minute_5_mib": warm, "rss_end_mib": per_minute[-1]["rss_mib"],
            "rss_growth_after_5_pct": round((per_minute[-1]["rss_mib"] - warm) / warm * 100, 1),
            "db_start_mib": per_minute[0]["db_mib"], "db_end_mib": per_minute[-1]["db_mib"]}


# -- results -----------------------------------------------------------------------------


def render() -> str:
    stored = recorded(RESULTS)
    lines = [f"`bench/soak.py`. Machine: {machine()}; PostgreSQL 15 on the same box (fsync on), SQLite in WAL mode. "
             "Measured: " + when_measured(stored) + ".", "",
             __doc__.split("\n\n", 2)[2].split("\n\n")[0].strip(), ""]
    for key in sorted(stored):
        d = stored[key]
        got = d["webhooks_received"]
        loads = [m["load"] for m in d["per_minute"] if "load" in m]
        lines += [f"### {d['db']}", "",
                  f"Capacity at the start: {d['capacity_per_s']} webhooks/s; load: {d['rate_per_s']}/s "
                  f"({d['rate_per_min']:,} a minute) for {d['minutes']} minutes from {d['began']}. Generated: "
                  f"{d['generated']['actions']:,} actions, {d['generated']['posts']} posts, "
                  f"{d['generated']['enrollments']:,} enrollments, {d['generated']['work_runs']} work runs "
                  f"({d['api_errors']} API errors). Webhooks received {got['received']:,} ({got['distinct']:,} "
                  f"distinct, {got['twice']} twice); emails {d['emails_received']:,}. Rows at the end: "
                  + ", ".join(f"{k} {v:,}" for k, v in sorted(d["statuses"].items()))
                  + (f"; due and not settled when the bench stopped waiting for them (up to five minutes after the load):"
                     f" {d['due_left']:,}." if "due_left" in d else "."), "",
                  f"Dashboard: {d['dashboard_requests']:,} pages, p50 {d['dashboard_p50_ms']} ms, p95 "
                  f"{d['dashboard_p95_ms']} ms ({d['dashboard_bad']} not 200). Consumer RSS at minute 5 "
                  f"{d['rss_minute_5_mib']} MiB, at the end {d['rss_end_mib']} MiB ({d['rss_growth_after_5_pct']} %). "
                  f"Database {d['db_start_mib']} MiB after the first minute, {d['db_end_mib']} MiB at the end."
                  + (f" Autovacuum: {d['autovacuum']}." if "autovacuum" in d else "")
                  + (f" The box's load average (1 min) read each minute: {min(loads)} to {max(loads)}." if loads
                     else " The box's load was not recorded in this run."), "",
                  "| minute | sends started | lateness p50 | p99 | drip steps p99 | consumer RSS | database | dashboard p95 |"
                  + (" box load |" if loads else ""),
                  "|---|---|---|---|---|---|---|---|" + ("---|" if loads else "")]
        for m in d["per_minute"]:
            lines.append(f"| {m['minute']} | {m['sent']:,} | {_seconds(m['p50'])} | {_seconds(m['p99'])} | "
                         f"{_seconds(m['drip_p99'])} | {m['rss_mib']} MiB | {m['db_mib']} MiB | {m['dashboard_p95_ms']} ms |"
                         + (f" {m.get('load', '–')} |" if loads else ""))
        lines.append("")
    lines += ["### Against the targets", ""]
    for key in sorted(stored):
        d = stored[key]
        lines.append(f"- {d['db']}: consumer RSS growth after the first five minutes under 10 %: "
                     f"{'met' if d['rss_growth_after_5_pct'] < 10 else 'missed'} ({d['rss_growth_after_5_pct']} %); "
                     f"no webhook twice: {'met' if d['webhooks_received']['twice'] == 0 else 'missed'}; lateness p99, "
                     f"median minute {_seconds(d['lateness_p99_median_minute'])}, worst "
                     f"{_seconds(d['lateness_p99_worst_minute'])}.")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    """A lateness as the table shows it: a dash for a minute in which no send started."""
    return "–" if value is None else f"{round(value, 3)} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="?", choices=["run", "write"], default="run")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--pg", default=bench_clock.DEFAULT_PG)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.which == "write":
        write_section("Soak", render())
        return
    minutes = 2 if args.quick else args.minutes
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    with tempfile.TemporaryDirectory() as tmp:
        outcomes: dict[str, dict] = {}

        def one(kind: str):
            try:
                outcomes[kind] = soak(kind, args.pg, minutes, Path(tmp))
            except BaseException as exc:  # a SystemExit in a thread would end it without a word
                print(f"the {kind} soak failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

        runners = [threading.Thread(target=one, args=(kind,)) for kind in kinds]
        for runner in runners:
            runner.start()
        for runner in runners:
            runner.join()
    for kind in kinds:
        if kind in outcomes:
            record(outcomes[kind], RESULTS, f"soak:{kind}", keep=not args.quick)
    if not args.quick:
        write_section("Soak", render())


if __name__ == "__main__":
    main()
