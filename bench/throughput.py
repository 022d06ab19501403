"""Benchmarks of sends that call out: 10,000 webhooks or emails due at once, through `tickwork serve`.

    .venv/bin/python bench/throughput.py webhook [--pg URL] [--rows 10000] [--latency 0.02]
    .venv/bin/python bench/throughput.py smtp    [--pg URL] [--rows 10000]
    .venv/bin/python bench/throughput.py all --pg URL --write   # both, the log drain beside them, then docs
    .venv/bin/python bench/throughput.py webhook --quick        # 200 rows; prints only, keeps nothing

Every figure comes from real processes: `tickwork serve` as an operator starts it (a web
process and the one consumer it starts by default, 4 worker threads and the default
sending threads), a loopback receiver in a process of its own (an HTTP server answering
each POST after `--latency`, or an aiosmtpd server), and the scheduler's tick run in an
interpreter with the app loaded, as the consumer's periodic tick runs it. The consumer's
CPU time and resident memory are read from /proc. Results are printed as JSON lines and kept
in bench/.throughput-results.json so `--write` can render them into docs/benchmarks.md.
"""

from common import ROOT, machine, make_app, record, recorded, tickwork, when_measured, write_section

import argparse
import json
import os
import statistics
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import clock as bench_clock

RESULTS = ROOT / "bench" / ".throughput-results.json"
TICKS = os.sysconf("SC_CLK_TCK")
QUICK_ROWS = 200  # --quick: a look that the code runs, not figures to keep

HTTP_RECEIVER = textwrap.dedent("""
    import json, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    latency, out = float(sys.argv[1]), sys.argv[2]
    seen, lock = {}, threading.Lock()
    class Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver offers
        wbufsize = 65536  # the answer leaves in one write
        disable_nagle_algorithm = True
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency)
            with lock:
                key = json.loads(body)["id"]
                seen[key] = seen.get(key, 0) + 1
            answer = b'{"id": "ok"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        def log_message(self, *args):
            pass
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256
    server = Server(("127.0.0.1", 0), Receiver)
    print(server.server_address[1], flush=True)
    def report(*_):
        with lock:
            json.dump({"received": sum(seen.values()), "distinct": len(seen),
                       "twice": sum(1 for n in seen.values() if n > 1)}, open(out, "w"))
        raise SystemExit(0)
    import signal; signal.signal(signal.SIGTERM, report)
    server.serve_forever()
""")

SMTP_RECEIVER = textwrap.dedent("""
    import json, signal, sys, threading, time, socket
    from aiosmtpd.controller import Controller
    out = sys.argv[1]
    stats = {"received": 0, "connections": set()}
    class Mailbox:
        async def handle_DATA(self, server, session, envelope):
            stats["received"] += 1
            stats["connections"].add(session.peer)
            return "250 2.0.0 Ok: queued"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
    controller = Controller(Mailbox(), hostname="127.0.0.1", port=port)
    controller.start()
    print(port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    controller.stop()
    json.dump({"received": stats["received"], "connections": len(stats["connections"])}, open(out, "w"))
""")


def start_receiver(kind: str, workdir: Path, latency: float) -> tuple[subprocess.Popen, int, Path]:
    out = workdir / f"{kind}-receiver.json"
    script = HTTP_RECEIVER if kind == "webhook" else SMTP_RECEIVER
    args = [sys.executable, "-c", script] + ([str(latency), str(out)] if kind == "webhook" else [str(out)])
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    return process, int(process.stdout.readline()), out


def stop_receiver(process: subprocess.Popen, out: Path) -> dict:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    return json.loads(out.read_text())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def consumer_pid(log: Path, timeout: float = 300) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines() if log.exists() else []:
            if "consumer started (pid" in line:
                return int(line.rsplit("pid ", 1)[1].rstrip(")"))
        time.sleep(0.2)
    raise SystemExit(f"tickwork serve started no consumer; see {log}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def bench_sends(kind: str, db: str, pg_admin: str | None, rows: int, workdir: Path, latency: float,
                root: Path = ROOT, command_tick: bool = False) -> dict:
    """``rows`` due at once through `tickwork serve` to a loopback receiver; how long until all are published.

    ``root`` is the checkout whose `tickwork serve` runs (another one's code, to compare with this one's);
    ``command_tick`` runs the tick as that checkout's `tickwork tick` (so its own code hands the rows over)."""
    from jobs.clock import tick_once

    database_url = bench_clock.fresh_database(db, pg_admin, workdir)
    queue_url = bench_clock.queue_url_for(db, database_url, workdir)
    receiver, port, out = start_receiver(kind, workdir, latency)
    serve = None
    try:
        app = make_app(database_url, frozen_at=None)
        if kind == "webhook":
            config = {"url": f"http://127.0.0.1:{port}/hook"}
        else:
            config = {"host": "127.0.0.1", "port": port, "from": "news@example.com", "security": "none"}
        ws, channel = bench_clock.workspace_with_log_channel(app, kind, config)
        log = workdir / f"serve-{kind}-{db}.log"
        with open(log, "w") as handle:
            serve = subprocess.Popen(tickwork("serve", "--host", "127.0.0.1", "--port", str(free_port())), cwd=root,
                                     stdout=handle, stderr=handle, env=bench_clock.env_for(database_url, queue_url))
        pid = consumer_pid(log)
        ticker = make_app(database_url, queue_url=queue_url, frozen_at=None)
        bench_clock.wait_started([log])  # the consumer up and polling before the rows arrive
        bench_clock.insert_rows(app, ws, channel, [datetime.now(timezone.utc) - timedelta(seconds=1)] * rows)
        if kind == "smtp":
            _email_payloads(app)
        cpu_before, started = cpu_seconds(pid), time.monotonic()
        if command_tick:
            done = subprocess.run(tickwork("tick"), cwd=root, env=bench_clock.env_for(database_url, queue_url),
                                  capture_output=True, text=True, check=True)
            summary = json.loads(done.stdout.strip().splitlines()[-1])
        else:
            with ticker.app_context():
                summary = tick_once(inline=False)
        handed_over = time.monotonic() - started
        peak = 0
        while bench_clock.count(app, "published") + _failed(app) < rows:
            peak = max(peak, bench_clock.rss_kib(pid))
            if time.monotonic() - started > 600:
                raise SystemExit(f"{kind} on {db}: not all out in 10 minutes")
            time.sleep(0.1)
        took = time.monotonic() - started
        cpu = cpu_seconds(pid) - cpu_before
        peak = max(peak, bench_clock.rss_kib(pid))
        published = bench_clock.count(app, "published")
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=60)
        received = stop_receiver(receiver, out)
        bench_clock.drop_database(database_url, pg_admin)
    return {"bench": "sends", "provider": kind, "db": db, "rows": rows, "latency_ms": round(latency * 1000),
            "tick_due": summary["due"], "handed_over_seconds": round(handed_over, 2), "seconds": round(took, 2),
            "published": published, "rate": round(rows / took), "consumer_cpu_seconds": round(cpu, 1),
            "consumer_cpu_pct": round(cpu / took * 100), "consumer_rss_peak_mib": round(peak / 1024, 1),
            "received": received}


def bench_cpu(db: str, pg_admin: str | None, rows: int, workdir: Path, latency: float, base: Path,
              rounds: int) -> dict:
    """Consumer CPU seconds per 1,000 webhook sends, this checkout against ``base`` (main's code), in one run.

    Each round runs the same `bench_sends` (this script's: rows inserted, tick, timing) with `tickwork
    serve` started in each checkout in turn (the base's web process and consumers run its code), and
    the raw claim loop on a fresh database of the same kind beside them; the figures are the medians
    over the rounds.
    """
    ours, theirs, raw = [], [], []
    for _ in range(rounds):
        theirs.append(bench_sends("webhook", db, pg_admin, rows, workdir, latency, root=base, command_tick=True))
        ours.append(bench_sends("webhook", db, pg_admin, rows, workdir, latency, command_tick=True))
        raw.append(_raw_loop(db, pg_admin, rows, workdir))
        for run in (theirs[-1], ours[-1]):  # CPU per send means nothing of a run whose rows were refused
            if run["published"] != rows:
                raise SystemExit(f"webhook on {db}: {run['published']} of {rows} published; see the receiver and the log")
    per_1000 = lambda runs: statistics.median(r["consumer_cpu_seconds"] / r["rows"] * 1000 for r in runs)  # noqa: E731
    return {"bench": "cpu", "provider": "webhook", "db": db, "rows": rows, "rounds": rounds,
            "base": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=base, capture_output=True,
                                   text=True).stdout.strip(),
            "cpu_per_1000": round(per_1000(ours), 2), "base_cpu_per_1000": round(per_1000(theirs), 2),
            "ratio": round(per_1000(ours) / per_1000(theirs), 3),
            "rate": round(statistics.median(r["rate"] for r in ours)),
            "base_rate": round(statistics.median(r["rate"] for r in theirs)),
            "raw_rate": round(statistics.median(raw)),
            "runs": [{"ours": o["consumer_cpu_seconds"], "base": t["consumer_cpu_seconds"], "raw": round(r)}
                     for o, t, r in zip(ours, theirs, raw)]}


def _raw_loop(db: str, pg_admin: str | None, rows: int, workdir: Path) -> float:
    """The raw claim loop's rows/s (bench/clock.py's) over ``rows`` fresh rows of a new database."""
    url = bench_clock.fresh_database(db, pg_admin, workdir)
    try:
        app = make_app(url, frozen_at=None)
        ws, channel = bench_clock.workspace_with_log_channel(app)
        now = datetime.now(timezone.utc)
        rates = bench_clock._raw_rate(app, url, ws, channel, rows, db, now)
        return max(rates["one"], rates["four"])
    finally:
        bench_clock.drop_database(url, pg_admin)


def _email_payloads(app) -> None:
    """The bench rows' payloads as emails."""
    from sqlalchemy import update

    from models.actions.tables import ScheduledAction
    from models.core.database import write_session

    with app.app_context(), write_session() as session:
        session.execute(update(ScheduledAction).values(
            action_type="send_email", payload={"subject": "Bread at nine", "text": "Fresh bread at nine.",
                                               "to": "reader@example.com"}))


def _failed(app) -> int:
    return bench_clock.count(app, "failed")


# -- results -----------------------------------------------------------------------------


def remember(result: dict, *, keep: bool = True) -> None:
    """Print ``result``; ``keep`` it in RESULTS too, for --write."""
    key = f"{result['bench']}:{result.get('provider', 'log')}:{result['db']}"
    record(result, RESULTS, key, keep=keep)


def render() -> str:
    stored = recorded(RESULTS)
    sends = [stored[k] for k in sorted(stored) if k.startswith("sends:")]
    drains = [stored[k] for k in sorted(stored) if k.startswith("drain:")]
    lines = [f"`bench/throughput.py`. Machine: {machine()}; PostgreSQL 15 on the same box (fsync on), SQLite in WAL mode. The box is "
             "shared with other engineers' suites and benchmarks, so its speed drifts by a factor of two or more within "
             "minutes; compare only figures from one run. Measured: "
             + when_measured(stored) + ".", ""]
    if sends:
        lines += ["### Sends that call out", "",
                  "10,000 actions due at once through `tickwork serve` as it starts by default (a web process and one "
                  "consumer: 4 worker threads, 32 sending threads), the tick run once in an interpreter with the app "
                  "loaded, as the consumer's periodic tick runs it. Webhook: a loopback HTTP receiver (a process of its "
                  "own) answering each POST after 20 ms, with keep-alive. SMTP: a loopback aiosmtpd server. Time from "
                  "the tick's start to the last row published; consumer CPU is its user + system time over that span.",
                  "",
                  "| provider | database | all out | sends/s | tick hand-over | consumer CPU | consumer peak RSS | receiver |",
                  "|---|---|---|---|---|---|---|---|"]
        for d in sends:
            got = d["received"]
            seen = (f"{got['received']:,} requests, {got.get('twice', 0)} twice" if d["provider"] == "webhook"
                    else f"{got['received']:,} messages over {got['connections']} connections")
            lines.append(f"| {d['provider']} | {d['db']} | {d['seconds']} s ({d['published']:,} published) | "
                         f"{d['rate']:,} | {d['handed_over_seconds']} s | {d['consumer_cpu_seconds']} s "
                         f"({d['consumer_cpu_pct']} % of a core) | {d['consumer_rss_peak_mib']} MiB | {seen} |")
        lines.append("")
    if drains:
        lines += ["### The log drain beside the raw rate, same run", "",
                  "`bench/clock.py drain` in the same run: 10,000 `log` actions through one consumer (4 threads), the "
                  "tick in an interpreter with the app loaded; the raw loop (a guarded claim UPDATE and a final UPDATE "
                  "per row, each committed) measured before and after the drain, the faster of the two counting. The "
                  "`tickwork tick` column is a second drain over fresh rows with the tick run as a command, whose "
                  "interpreter start and imports count in it.", "",
                  "| database | all published | full path | raw (before, after) | full ÷ raw | with `tickwork tick` | its ratio |",
                  "|---|---|---|---|---|---|---|"]
        for d in drains:
            raw = f"{d['raw_rate_1']:,}" + (f" (4 connections {d['raw_rate_4']:,})" if d.get("raw_rate_4") else "")
            spread = ", ".join(f"{n:,}" for n in d.get("raw_spread", []))
            lines.append(f"| {d['db']} | {d['drain_seconds']} s | {d['full_rate']:,} rows/s | {raw} rows/s ({spread}) | "
                         f"{d['ratio']} | {d['command_drain_seconds']} s ({d['command_full_rate']:,} rows/s) | "
                         f"{d['command_ratio']} |")
        lines.append("")
    cpus = [stored[k] for k in sorted(stored) if k.startswith("cpu:")]
    if cpus:
        lines += ["### CPU per webhook send, against main's code in the same run", "",
                  "`bench/throughput.py cpu --base CHECKOUT`: the webhook run above (through `tickwork serve`, a 20 ms "
                  "receiver), on this code and on a checkout of main (`git worktree add`) one after the other, and the "
                  "raw claim loop on a fresh database beside them, in each round; consumer CPU seconds (user + system, "
                  "from /proc) per 1,000 sends, medians over the rounds.", "",
                  "| database | rows | rounds | main at | CPU per 1,000 sends, main | this code | ratio | sends/s, main / this "
                  "| raw loop, rows/s | each round (main, this, raw) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for d in cpus:
            runs = "; ".join(f"{r['base']} s, {r['ours']} s, {r['raw']:,}/s" for r in d["runs"])
            lines.append(f"| {d['db']} | {d['rows']:,} | {d['rounds']} | {d['base']} | {d['base_cpu_per_1000']} s | "
                         f"{d['cpu_per_1000']} s | {d['ratio']} | {d['base_rate']} / {d['rate']} | {d['raw_rate']:,} | "
                         f"{runs} |")
        lines.append("")
    lines += ["### Against the targets", ""]
    for d in cpus:
        lines.append(f"- webhook on {d['db']}: consumer CPU per send at most half of main's: "
                     f"{'met' if d['ratio'] <= 0.5 else 'missed'} ({d['ratio']} of main's, {d['rounds']} round(s)).")
    for d in sends:
        lines.append(f"- {d['provider']} on {d['db']}: 10,000 due at once all out within 60 s: "
                     f"{'met' if d['seconds'] <= 60 and d['published'] == d['rows'] else 'missed'} ({d['seconds']} s).")
    for d in drains:
        goal = 0.5 if d["db"] == "sqlite" else 0.9
        caveat = "; across this session's runs 0.47 to 1.01, below 0.5 in five of fifteen, see below" \
            if d["db"] == "sqlite" else ""
        lines.append(f"- log drain on {d['db']} at least {goal} of the raw rate: "
                     f"{'met in this run' if d['ratio'] >= goal else 'missed in this run'} ({d['ratio']}; with the "
                     f"tick as a command {d['command_ratio']}{caveat}).")
    lines += ["", NOTES, ""]
    return "\n".join(lines)


NOTES = """Where the time goes. A row that calls out costs the consumer two short write transactions (the
claim with its event, the outcome with its event) and the request itself: about 2 to 3 ms of
one core in all, measured in-process before choosing the concurrency model (below). The
sending threads overlap the provider's latency, so the consumer is bound by that CPU and by
the database's commits, not by the network: 32 sends in flight hide 20 ms of latency. On
SQLite every write transaction takes the one write lock, so the process's writers queue on a
lock of their own rather than in SQLite's busy handler, which sleeps up to 100 ms between
looks. SMTP sends a chunk's messages for a channel over two connections (MAIL, RCPT, DATA per
message, 25 messages each), so a 10,000-message run opens about 400 connections, and the
consumer keeps at most 8 open at once (4 workers × 2).

CPU per webhook send, where it went (py-spy on a `tickwork serve` consumer and cProfile on the
dispatch alone in one process, 2,000 webhooks, 32 sending threads): about half in httpx's client
around the request (`Client.send`'s auth and redirect flows and its cookie jar, read and written
through `http.cookiejar` at every request, a third of a send by itself), a tenth in httpcore's
pool bookkeeping (for every queued request it looked at all 32 connections again, and polled
every idle socket whenever a request started or ended), and most of the rest in the claim and
outcome transactions, about four rows each. Changed since main at 54efbc2: a plain request goes
straight to the egress client's transport, built as httpx's client builds it
(`models/channels/providers/http.py`; a request with credentials still goes through the
client); the egress pool makes httpcore's decisions in one pass and asks an idle connection
whether it expired just before reusing it (`models/core/egress.py`); outcomes are committed
sixteen at a time (`MIN_BATCH`; 2,000 webhooks took 250 write transactions instead of 530); the
look builds its rows by position. What is left: h11 and httpcore writing and parsing each
request and response (pure Python, about a third of a millisecond per request measured alone),
the claim and outcome transactions, and what a consumer costs while it waits (its clock jobs
and polling, about 5 ms of CPU a second, inside every measured window). The rounds spread widely on
the loaded box: this code's CPU over main's in the same round was 0.71, 0.61 and 0.48 on SQLite and
1.07, 0.88 and 0.60 on PostgreSQL (2026-12-02, load average 9 to 15 on 2 cores), so the target of a
half is missed by the medians (0.67 on both). Before that run the benches' receivers were refused
by the egress policy as loopback destinations (the CPU bench timed 2,000 refusals); `bench/clock.py`'s
`env_for` now opens `127.0.0.0/8`, and the CPU bench stops on a run that did not publish every row.

The log drain on SQLite, run by run. Fifteen drains with the final dispatch code this
session, all on the busy box, gave full ÷ raw from 0.47 to 1.01 (median about 0.6); five
fell below 0.5 (0.47 to 0.50), four of them when the raw loop ran its fastest (12,500 to
13,400 rows/s, the box momentarily quiet) while the drain ran at 6,200 to 6,400 rows/s; the
last, after the outbox fix, made 0.52 against a raw loop at 13,345 rows/s (docs "## Clock").
So the goal of one half is met under the load these runs saw, and is marginal on a quiet box.
Where the time goes, from py-spy on the consumer and cProfile on the same drain in one
thread: about 120 µs of CPU per row (the raw loop needs about 75), of which roughly a third
is SQLite executing the statements (two guarded UPDATEs, the two event rows and the outbox
entry the raw loop does not write, and their indexes), a third SQLAlchemy building and
binding statements and converting UTC times, the rest Huey (a dequeue and a revoke check per
task, each a transaction on the queue file) and the look at the chunk. Fixed since profiling:
the workers queued in SQLite's sleeping busy handler (a fifth of their time; now a lock),
an ORM object built per claimed row (a tenth), one INSERT per outbox entry instead of one per
chunk, and the queue file syncing at every task taken. With the tick run as `tickwork tick`,
its interpreter start and imports (one to two seconds, most of its fan-out) count too, and
that ratio stays near 0.3 to 0.6.

Choosing the concurrency model (`bench/send_models.py`): 2,000 webhook sends to a receiver
answering in 20 ms, the real claim, send and record for each row, in one process. Measured
twice: before choosing, on the code as it was (the receiver's listen backlog still reset a few
connections under 32 at once, which cost the gevent runs 16 rows and the asyncio SQLite run
its completion), and again at the end, with SQLite's writers queued on a lock and the backlog
raised. Rows per second, SQLite / PostgreSQL, and CPU per row:

| model | before choosing | at the end | CPU per row (end) |
|---|---|---|---|
| 4 threads (what one consumer had) | 132 / 105 | 140 / 87 | 2.4 / 3.4 ms |
| thread pool, 16 | 347 / 202 | — | — |
| thread pool, 32 | 391 / 274 | 437 / 341 | 2.0 / 2.5 ms |
| gevent, 32 greenlets (monkey-patched) | 237 / 106 | 150 / 72 | 3.0 / 4.6 ms |
| asyncio + httpx.AsyncClient, 32 at once, database calls on the loop | failed / 99 | 172 / 69 | 4.0 / 4.8 ms |

Threads won, and they keep every provider as it is (synchronous httpx, smtplib), each row
claimed just before its own send; gevent gains nothing while psycopg and sqlite3 block its
hub, and an asyncio loop would need every provider written twice and still blocks on the
database."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", choices=["webhook", "smtp", "drain", "all", "write", "cpu"])
    parser.add_argument("--base", default=None, help="cpu: a checkout of the code to compare with (e.g. main's)")
    parser.add_argument("--rounds", type=int, default=2, help="cpu: rounds, each measuring both checkouts")
    parser.add_argument("--pg", default=None, help="PostgreSQL admin URL (also runs the PostgreSQL variants)")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.02, help="the webhook receiver's answer time, seconds")
    parser.add_argument("--write", action="store_true", help="render docs/benchmarks.md's Throughput section")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows; print only, keep nothing")
    args = parser.parse_args()
    kinds = ["sqlite"] + (["postgresql"] if args.pg else [])
    keep = not args.quick
    if args.quick:
        args.rows = QUICK_ROWS
    if args.which == "cpu":
        with tempfile.TemporaryDirectory() as tmp:
            for db in kinds:
                remember(bench_cpu(db, args.pg, args.rows, Path(tmp), args.latency, Path(args.base), args.rounds),
                         keep=keep)
        if not args.quick:
            write_section("Throughput", render())
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for db in kinds:
            if args.which in ("webhook", "all"):
                remember(bench_sends("webhook", db, args.pg, args.rows, workdir, args.latency), keep=keep)
            if args.which in ("smtp", "all"):
                remember(bench_sends("smtp", db, args.pg, args.rows, workdir, args.latency), keep=keep)
            if args.which in ("drain", "all"):
                remember(bench_clock.bench_drain(db, args.pg, args.rows, workdir), keep=keep)
    if (args.write or args.which == "write") and not args.quick:
        write_section("Throughput", render())


if __name__ == "__main__":
    main()
