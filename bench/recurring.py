"""Benchmark: a full expander pass over 10,000 active recurring rules, beside 0 and beside 1,000,000 past rows.

The expander's cost must follow the rules and the window, never the history. Each size gets a
fresh database built by the migrations: one workspace, 10,000 active rules never expanded (a
third daily, a third weekly on two days, a third monthly, on one day or the last Friday), and
for the second size 1,000,000 rows of those same rules' past occurrences (published, failed,
cancelled; 100 a rule), bulk-loaded under the very keys the pass looks up. One full pass is
timed (it mints every rule's next 14 days; best of 2 rounds, the sizes alternating, the minted rows
deleted between rounds), then a steady pass (best of 3; nothing new to mint).

Beside it, in the same run and database, the raw insert rate: the same number of rows, of the
same shape, one transaction per rule as the expander has, each a plain INSERT (no checks, no
event rows, no savepoints).

    .venv/bin/python bench/recurring.py                     # SQLite
    .venv/bin/python bench/recurring.py --pg postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python bench/recurring.py --rules 1000 --history 100000    # a quicker look
    .venv/bin/python bench/recurring.py --quick             # 100 rules, a check that it runs; prints only

Figures are printed and written under "## Recurring rules" in docs/benchmarks.md.
"""

from common import T0, machine, make_app, migrate, pg_databases, workspace_with_channel, write_section

import argparse
import tempfile
import time
from datetime import datetime, timedelta, timezone

from sqlalchemy import insert, text

HISTORY_PER_RULE = 100
CHUNK = 20_000
STEADY_REPEATS = 3
# Full passes (and raw runs) per size, alternating between the sizes; the best is kept, so a burst of
# load from whatever else runs on the machine slows one round, not one size.
ROUNDS = 2
QUICK_RULES, QUICK_HISTORY = 100, 10_000  # --quick: a look that the code runs, not figures to keep
SHAPES = [  # (rrule, share of the rules)
    ("FREQ=DAILY", 3),
    ("FREQ=WEEKLY;BYDAY=MO,TH", 3),
    ("FREQ=MONTHLY;BYMONTHDAY=10", 2),
    ("FREQ=MONTHLY;BYDAY=-1FR", 1),
]


def shapes(rules: int) -> list[str]:
    cycle = [rrule for rrule, share in SHAPES for _ in range(share)]
    return [cycle[n % len(cycle)] for n in range(rules)]


def build(app, rules: int, history: int) -> tuple[int, int]:
    """The workspace, its channel, ``rules`` active rules and ``history`` past rows of theirs; (workspace, channel)."""
    from models.actions.guard import drop_publish_guard, install_publish_guard
    from models.actions.tables import ScheduledAction
    from models.core.database import db, write_session
    from models.recurring.tables import RecurringSchedule, slot_thing_id

    ws, ch = workspace_with_channel(app)
    with app.app_context():
        starts = datetime(2025, 1, 1, 9, 0)
        for first in range(0, rules, CHUNK):
            with write_session() as session:
                session.execute(insert(RecurringSchedule.__table__), [
                    dict(workspace_id=ws, action_type="send_email", channel_id=ch, target_key=f"list-{n}@example.test",
                         payload={"subject": "Digest {{ occurrence.local_date }}"}, rrule=rrule,
                         starts_local=starts, starts_at=datetime(2025, 1, 1, 14, 0, tzinfo=timezone.utc),
                         exdates_local=[], misfire="skip", status="active", revision=1, created_at=T0, updated_at=T0)
                    for n, rrule in enumerate(shapes(rules)[first:first + CHUNK], start=first)])
        ids = [row[0] for row in db.session.execute(text("SELECT id FROM recurring_schedules ORDER BY id"))]
        db.session.remove()
        with db.engine.begin() as conn:
            drop_publish_guard(conn)  # a bulk load of history; the guard goes back right after
        statuses = [("published", None, None)] * 3 + [("failed", None, "permanent"), ("cancelled", "person", None)]
        batch = []
        for index in range(history):
            rule_id = ids[index % len(ids)]
            day = T0 - timedelta(days=1 + index // len(ids))
            status, kind, failure = statuses[index % len(statuses)]
            at = day.replace(hour=13)
            batch.append(dict(workspace_id=ws, action_type="send_email",
                              thing_id=slot_thing_id(rule_id, f"{day:%Y-%m-%d}T09:00"),
                              target_key=f"list-{rule_id}@example.test", channel_id=ch, payload={"subject": "old"},
                              publish_at=at, status=status, cancel_kind=kind, failure_code=failure, attempt_count=1,
                              origin="recurring", recurring_schedule_id=rule_id, finished_at=at, created_at=at,
                              updated_at=at))
            if len(batch) == CHUNK:
                with write_session() as session:
                    session.execute(insert(ScheduledAction.__table__), batch)
                batch = []
        if batch:
            with write_session() as session:
                session.execute(insert(ScheduledAction.__table__), batch)
        with db.engine.begin() as conn:
            install_publish_guard(conn)
            if history:
                # Statistics for the loaded history. An empty table is left unanalysed: analysed empty,
                # PostgreSQL plans the publish guard's lookup as a sequential scan and keeps that plan
                # in the connection while the pass fills the table (a fresh install's autovacuum
                # analyses it once rows arrive).
                conn.execute(text("ANALYZE"))
        return ws, ch


def timed_pass(app) -> tuple[float, dict]:
    from models.core.runtime import runtime
    from models.recurring.expander import run_expander

    with app.app_context():
        rt = runtime()
        started = time.perf_counter()
        summary = run_expander(clock=rt.clock, policy=rt.policy)
        return time.perf_counter() - started, summary


def raw_inserts(app, ws: int, ch: int, per_rule: list[int]) -> float:
    """Seconds to insert sum(per_rule) rows shaped like the minted ones, one transaction per rule."""
    from models.actions.tables import ScheduledAction
    from models.core.database import write_session

    statement = insert(ScheduledAction.__table__)
    with app.app_context():
        started = time.perf_counter()
        for rule, count in enumerate(per_rule):
            if not count:
                continue
            with write_session() as session:
                session.execute(statement, [
                    dict(workspace_id=ws, action_type="send_raw", thing_id=f"raw:{rule}:{n}",
                         target_key=f"list-{rule}@example.test", channel_id=ch,
                         payload={"subject": "Digest 2026-06-01"}, publish_at=T0 + timedelta(days=n), status="queued",
                         attempt_count=0, origin="recurring", recurring_schedule_id=None, created_at=T0,
                         updated_at=T0)
                    for n in range(count)])
        return time.perf_counter() - started


def reset(app) -> None:
    """Undo a full pass and the raw inserts (every row due from T0 on), so the next round mints it all again."""
    from models.core.database import db

    with app.app_context():
        with db.engine.begin() as conn:
            conn.execute(text("DELETE FROM action_events WHERE action_id IN "
                              "(SELECT id FROM scheduled_actions WHERE publish_at >= :t0)"), {"t0": T0})
            conn.execute(text("DELETE FROM scheduled_actions WHERE publish_at >= :t0"), {"t0": T0})
            conn.execute(text("UPDATE recurring_schedules SET last_materialized_at = NULL"))
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM scheduled_actions, action_events"))
        db.session.remove()


def minted_per_rule(app) -> list[int]:
    from models.core.database import db

    with app.app_context():
        counts = dict(db.session.execute(text(
            "SELECT recurring_schedule_id, count(*) FROM scheduled_actions WHERE status = 'queued' "
            "AND origin = 'recurring' AND recurring_schedule_id IS NOT NULL GROUP BY recurring_schedule_id")).all())
        db.session.remove()
        return list(counts.values())


CUSTOM_PLANS = False  # --custom-plans: PostgreSQL plans every statement for its own values


def migrated_app(url: str):
    """The database at ``url`` migrated, and an app on it (with --custom-plans, PostgreSQL's plans as asked)."""
    migrate(url)
    config = {}
    if CUSTOM_PLANS and url.startswith("postgresql"):
        config["SQLALCHEMY_ENGINE_OPTIONS"] = {"connect_args": {"options": "-c plan_cache_mode=force_custom_plan"}}
    return make_app(url, **config)


def compare(urls: dict[int, str], rules: int, label: str) -> list[dict]:
    """Build one database per history size, then time the passes, alternating between them."""
    from models.core.database import db

    apps, results, keys = {}, {}, {}
    for size, url in urls.items():
        apps[size] = migrated_app(url)
        started = time.perf_counter()
        keys[size] = build(apps[size], rules, size)
        results[size] = dict(history=size, load_s=time.perf_counter() - started, steady_s=float("inf"))
        print(f"{label}: built {rules:,} rules and history={size:,} in {results[size]['load_s']:.0f}s", flush=True)
    for round_ in range(ROUNDS):
        last = round_ == ROUNDS - 1
        for size, app in apps.items():
            elapsed, first = timed_pass(app)
            assert first["rules_written"] == rules and not first["errors"], first
            results[size]["first_s"] = min(results[size].get("first_s", float("inf")), elapsed)
            results[size]["minted"] = first["minted"]
            print(f"{label}: round {round_ + 1}, history={size:,}: full pass {elapsed:.1f}s, "
                  f"{first['minted']:,} minted", flush=True)
        if last:
            for _ in range(STEADY_REPEATS):
                for size, app in apps.items():
                    elapsed, steady = timed_pass(app)
                    assert steady["minted"] == 0 and steady["rules_seen"] == rules, steady
                    results[size]["steady_s"] = min(results[size]["steady_s"], elapsed)
        for size, app in apps.items():
            per_rule = minted_per_rule(app)
            assert sum(per_rule) == results[size]["minted"]
            elapsed = raw_inserts(app, *keys[size], per_rule)
            results[size]["raw_s"] = min(results[size].get("raw_s", float("inf")), elapsed)
            print(f"{label}: round {round_ + 1}, history={size:,}: raw inserts {elapsed:.1f}s", flush=True)
        if not last:
            for app in apps.values():
                reset(app)
    for size, app in apps.items():
        with app.app_context():
            results[size]["rows"] = db.session.scalar(text("SELECT count(*) FROM scheduled_actions"))
            db.session.remove()
            db.engine.dispose()
        r = results[size]
        print(f"{label}: history={size:>9,}  first={r['first_s']:.1f}s  steady={r['steady_s']:.2f}s  "
              f"raw={r['raw_s']:.1f}s", flush=True)
    return [results[size] for size in urls]


def report(dialect: str, rules: int, results: list[dict]) -> list[str]:
    base = results[0]
    lines = [f"### {dialect}", "",
             "| past rows | rows after | full pass | rows minted | minted / s | raw inserts / s (same rows) | "
             "minted ÷ raw | steady pass | ratio to 0 (full / steady) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        minted_rate, raw_rate = r["minted"] / r["first_s"], r["minted"] / r["raw_s"]
        lines.append(f"| {r['history']:,} | {r['rows']:,} | {r['first_s']:.1f} s | {r['minted']:,} | "
                     f"{minted_rate:,.0f} | {raw_rate:,.0f} | {minted_rate / raw_rate:.2f} | {r['steady_s']:.2f} s | "
                     f"{r['first_s'] / base['first_s']:.2f}× / {r['steady_s'] / base['steady_s']:.2f}× |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--pg", default=None, help="PostgreSQL admin URL; also run there")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--custom-plans", action="store_true",
                        help="PostgreSQL only, plan_cache_mode=force_custom_plan (see docs/benchmarks.md); print only")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_RULES} rules beside {QUICK_HISTORY:,} past rows; print only")
    args = parser.parse_args()
    if args.quick:
        args.rules, args.history, args.no_write = QUICK_RULES, QUICK_HISTORY, True
    if args.custom_plans:
        global CUSTOM_PLANS
        CUSTOM_PLANS = True
        with pg_databases(args.pg, {size: f"tickwork_bench_recurring_custom_{size}" for size in (0, args.history)}
                          ) as urls:
            results = compare(urls, args.rules, "postgresql")
            print("\n".join(report("PostgreSQL, custom plans", args.rules, results)))
        return
    sizes = [0, args.history]
    lines = [
        f"`bench/recurring.py`: one full expander pass over {args.rules:,} active rules never expanded before (a third",
        "daily, a third weekly on two days, a third monthly on a day or the last Friday), minting each rule's next",
        f"14 days, in a database holding 0 and then {args.history:,} rows of those same rules' past occurrences",
        "(published, failed, person-cancelled, under the very keys the pass looks up), same run, best of 2 rounds",
        "with the sizes alternating; then a steady pass (best of 3) with nothing new to mint. Target: within 1.5×.",
        "Beside it, in the same run and database, the",
        "raw insert rate: the same rows, one transaction per rule, plain INSERTs with no checks, events or",
        f"savepoints. Measured {datetime.now(timezone.utc):%Y-%m-%d} on {machine()}, on a machine shared with other "
        "test suites.",
        f"Run: `.venv/bin/python bench/recurring.py [--pg URL] [--rules N] [--history N]`.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        lines += report("SQLite", args.rules,
                        compare({size: f"sqlite:///{tmp}/bench-{size}.db" for size in sizes}, args.rules, "sqlite"))
    if args.pg:
        with pg_databases(args.pg, {size: f"tickwork_bench_recurring_{size}" for size in sizes}) as urls:
            lines += report("PostgreSQL", args.rules, compare(urls, args.rules, "postgresql"))
    print("\n".join(lines))
    if not args.no_write:
        write_section("Recurring rules", "\n".join(lines))


if __name__ == "__main__":
    main()
