"""The send rate to each social network's loopback fake through `tickwork serve`, beside the webhook's in the same run.

    .venv/bin/python bench/networks.py [--rows 200] [--latency 0.02] [--pg URL]   # writes docs/benchmarks.md
    .venv/bin/python bench/networks.py --quick                                    # 40 rows; prints only

One `tickwork serve` as an operator starts it (a web process and its one consumer: 4 worker
threads, the default sending threads) runs the whole bench. The fakes of tests/fakes/ (the
ones the provider tests speak to: Bluesky's PDS, Mastodon, X, LinkedIn, Meta's Graph API for
Threads, Facebook and Instagram, Discord, Slack, Telegram) run in a process of their own, each
on its own loopback port, threaded, every answer after ``--latency`` (as the webhook receiver
of bench/throughput.py answers each POST). Then, one network after the other, ``--rows``
posts due at once on a channel of that kind (each with its own text: X and LinkedIn refuse a
duplicate), the tick run in an interpreter with the app loaded, and the time until the last is
published; after an uncounted warm-up batch of webhooks, a batch of webhooks to
bench/throughput.py's receiver first and last, so the ratio
of each network to the webhook is of one run on one box. An Instagram post needs an image: its
rows carry one library image, which Instagram fetches by its signed link (the fake takes the
link as fetched). A network's post is more than one request where its API is: Bluesky signs in
once, then ``createRecord``; Threads and Instagram make a container, read its status and
publish it (three requests); X, LinkedIn, Mastodon, Facebook, Discord, Slack and Telegram one.

Results go to bench/.networks-results.json and the "Network sends" section of docs/benchmarks.md.
"""

from common import ROOT, machine, make_app, record, recorded, tickwork, when_measured, write_section

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import clock as bench_clock
import throughput

RESULTS = ROOT / "bench" / ".networks-results.json"
ACCOUNT = "17841400000000001"
MEDIA_BASE = "http://tickwork.bench"

FAKES = textwrap.dedent("""
    import json, logging, signal, sys, threading, time
    sys.path.insert(0, sys.argv[3])
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from pytest_httpserver import HTTPServer
    latency, out = float(sys.argv[1]), sys.argv[2]

    class Server(HTTPServer):
        def dispatch(self, request):
            time.sleep(latency)
            return super().dispatch(request)

    def started():
        server = Server(host="127.0.0.1", port=0, threaded=True)
        server.start()
        return server

    from tests.fakes.bluesky import BlueskyFake
    from tests.fakes.discord import FakeDiscord
    from tests.fakes.linkedin import LinkedInFake
    from tests.fakes.mastodon import FakeMastodon
    from tests.fakes.meta import MetaGraph
    from tests.fakes.slack import FakeSlack
    from tests.fakes.telegram import FakeTelegram
    from tests.fakes.x import XFake
    account = "%s"
    servers, channels = {}, {}
    servers["bluesky"] = started(); pds = BlueskyFake(servers["bluesky"])
    channels["bluesky"] = ({"url": pds.url, "handle": pds.handle}, pds.password)
    servers["mastodon"] = started(); masto = FakeMastodon(servers["mastodon"])
    channels["mastodon"] = ({"url": masto.url, "visibility": "public"}, masto.token)
    servers["x"] = started(); x = XFake(servers["x"])
    channels["x"] = ({"url": x.base}, x.token)
    servers["linkedin"] = started(); li = LinkedInFake(servers["linkedin"])
    channels["linkedin"] = ({"url": li.base, "author": "urn:li:person:8675309"}, li.token)
    for network, key in (("threads", "user_id"), ("facebook", "page_id"), ("instagram", "ig_user_id")):
        servers[network] = started(); meta = MetaGraph(servers[network], network, account=account)
        channels[network] = ({"url": meta.base, key: account}, meta.token)
    servers["discord"] = started(); discord = FakeDiscord(servers["discord"])
    channels["discord"] = ({"url": discord.url}, discord.token)
    servers["slack"] = started(); slack = FakeSlack(servers["slack"])
    channels["slack"] = ({"url": slack.url, "channel": "C0TICKWORK"}, slack.token)
    servers["telegram"] = started(); telegram = FakeTelegram(servers["telegram"])
    channels["telegram"] = ({"url": telegram.url, "chat_id": "-1001234567890"}, telegram.token)
    print(json.dumps(channels), flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    json.dump({kind: len(server.log) for kind, server in servers.items()}, open(out, "w"))
    for server in servers.values():
        server.stop()
""" % ACCOUNT)


def start_fakes(workdir: Path, latency: float) -> tuple[subprocess.Popen, dict, Path]:
    out = workdir / "fakes.json"
    process = subprocess.Popen([sys.executable, "-c", FAKES, str(latency), str(out), str(ROOT)],
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line:
        raise SystemExit("the fakes did not start")
    return process, json.loads(line), out


def stop_fakes(process: subprocess.Popen, out: Path) -> dict:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    return json.loads(out.read_text()) if out.exists() else {}


def add_channel(app, ws: int, kind: str, name: str, config: dict, secret: str | None) -> int:
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        channel = Channel(workspace_id=ws, name=name, kind=kind, config={**config, "rate": "none"},
                          created_at=runtime().now())
        channel.set_secret(runtime().secret_box, secret)
        session.add(channel)
        session.flush()
        return channel.id


def add_image(app, ws: int) -> int:
    import io

    from PIL import Image

    from models.core.database import write_session
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from models.media.library import add_media
    from models.media.settings import media_settings

    out = io.BytesIO()
    Image.new("RGB", (1080, 1080), (200, 120, 40)).save(out, "JPEG", quality=85)
    with app.app_context(), write_session() as session:
        return add_media(session, ws, out.getvalue(), settings=media_settings(), actor=Actor(label="bench"),
                         now=runtime().now(), alt="A loaf").id


def insert_posts(app, ws: int, channel: int, kind: str, rows: int, media: list[int]) -> None:
    from sqlalchemy import insert

    from models.actions.tables import ScheduledAction
    from models.core.database import write_session
    from models.core.runtime import runtime

    due = datetime.now(timezone.utc) - timedelta(seconds=1)
    with app.app_context(), write_session() as session:
        now = runtime().now()
        session.execute(insert(ScheduledAction), [
            dict(workspace_id=ws, action_type="publish_post", target_key=f"{kind}-{n}", channel_id=channel,
                 payload={"body": f"Fresh bread at nine, batch {n} of {kind}", "text": f"Fresh bread, batch {n}",
                          **({"media": media} if media else {})},
                 publish_at=due, status="queued", attempt_count=0, origin="person", created_at=now, updated_at=now)
            for n in range(rows)])


def outcomes(app, channel: int) -> dict:
    from sqlalchemy import func, select

    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return dict(session.execute(select(ScheduledAction.status, func.count()).where(
            ScheduledAction.channel_id == channel).group_by(ScheduledAction.status)).all())


def first_error(app, channel: int) -> str | None:
    from sqlalchemy import select

    from models.actions.tables import ScheduledAction
    from models.core.database import read_session

    with app.app_context(), read_session() as session:
        return session.scalar(select(ScheduledAction.last_error).where(
            ScheduledAction.channel_id == channel, ScheduledAction.last_error.is_not(None)).limit(1))


def batch(app, ticker, pid: int, ws: int, channel: int, kind: str, rows: int, media: list[int]) -> dict:
    """``rows`` posts due at once on ``channel``: the tick, then the time until none is left queued or sending."""
    from jobs.clock import tick_once

    before = outcomes(app, channel)
    insert_posts(app, ws, channel, kind, rows, media)
    cpu_before, started = throughput.cpu_seconds(pid), time.monotonic()
    with ticker.app_context():
        tick_once(inline=False)
    while True:
        now = outcomes(app, channel)
        counts = {status: now.get(status, 0) - before.get(status, 0) for status in now}
        if counts.get("published", 0) + counts.get("failed", 0) >= rows:
            break
        if time.monotonic() - started > 180:
            raise SystemExit(f"{kind}: not all out in 3 minutes ({counts}; {first_error(app, channel)})")
        time.sleep(0.05)
    took = time.monotonic() - started
    cpu = throughput.cpu_seconds(pid) - cpu_before
    published = counts.get("published", 0)
    return {"kind": kind, "rows": rows, "published": published, "seconds": round(took, 2),
            "rate": round(published / took, 1), "consumer_cpu_ms_per_post": round(cpu / max(1, published) * 1000, 2),
            "error": first_error(app, channel) if published < rows else None}


def bench(db: str, pg_admin: str | None, rows: int, latency: float, workdir: Path) -> dict:
    database_url = bench_clock.fresh_database(db, pg_admin, workdir)
    queue_url = bench_clock.queue_url_for(db, database_url, workdir)
    media_dir = workdir / "media"
    fakes, channels, fakes_out = start_fakes(workdir, latency)
    receiver, port, receiver_out = throughput.start_receiver("webhook", workdir, latency)
    serve = None
    results, received = [], {}
    try:
        # The fakes and the receiver are on loopback, which the egress policy refuses unless opened.
        extra = {"TICKWORK_MEDIA_DIR": str(media_dir), "TICKWORK_BASE_URL": MEDIA_BASE,
                 "TICKWORK_EGRESS_ALLOW": "127.0.0.0/8"}
        app = make_app(database_url, frozen_at=None, **extra)
        ws, webhook = bench_clock.workspace_with_log_channel(app, "webhook", {"url": f"http://127.0.0.1:{port}/hook"})
        ids = {kind: add_channel(app, ws, kind, kind, config, secret) for kind, (config, secret) in channels.items()}
        image = add_image(app, ws)
        log = workdir / f"serve-networks-{db}.log"
        env = {**bench_clock.env_for(database_url, queue_url), **extra}
        with open(log, "w") as handle:
            serve = subprocess.Popen(tickwork("serve", "--host", "127.0.0.1", "--port", str(throughput.free_port())),
                                     cwd=ROOT, stdout=handle, stderr=handle, env=env)
        pid = throughput.consumer_pid(log)
        ticker = make_app(database_url, queue_url=queue_url, frozen_at=None, **extra)
        bench_clock.wait_started([log])
        batch(app, ticker, pid, ws, webhook, "webhook", max(20, rows // 4), [])  # a warm-up, not counted
        results.append({**batch(app, ticker, pid, ws, webhook, "webhook", rows, []), "kind": "webhook (first)"})
        for kind, channel in ids.items():
            results.append(batch(app, ticker, pid, ws, channel, kind, rows, [image] if kind == "instagram" else []))
            print(json.dumps(results[-1]), flush=True)
        results.append({**batch(app, ticker, pid, ws, webhook, "webhook", rows, []), "kind": "webhook (last)"})
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=60)
        received = stop_fakes(fakes, fakes_out)
        throughput.stop_receiver(receiver, receiver_out)
        bench_clock.drop_database(database_url, pg_admin)
    webhook_rate = sum(r["rate"] for r in results if r["kind"].startswith("webhook")) / 2
    for r in results:
        r["vs_webhook"] = round(r["rate"] / webhook_rate, 2) if webhook_rate else None
        r["requests"] = received.get(r["kind"])
    return {"bench": "networks", "db": db, "rows": rows, "latency_ms": round(latency * 1000),
            "webhook_rate": round(webhook_rate, 1), "load": round(os.getloadavg()[0], 1), "results": results}


def render() -> str:
    stored = recorded(RESULTS)
    lines = [f"`bench/networks.py`. Machine: {machine()}, shared with other engineers' suites (its speed drifts by a "
             "factor of two within minutes: compare figures of one run only). Measured: " + when_measured(stored) + ".",
             "",
             "One `tickwork serve` as it starts by default (a web process and one consumer: 4 worker threads and the "
             "default sending threads). Each network's loopback fake (tests/fakes/, the ones the provider tests speak "
             "to), all in one process apart from Tickwork's, each on its own port, threaded, every request answered after "
             "the same latency as the webhook receiver (a process of its own). One network after another: the posts due at once on one channel of that kind, the tick in an "
             "interpreter with the app loaded, the time until the last is published. After an uncounted warm-up, "
             "a webhook batch to bench/throughput.py's receiver runs first and last; the ratio is to the mean of those two. Requests: "
             "what the fake received, its sign-in included. Threads and Instagram make a container, read its status "
             "and publish (three requests a post); Bluesky signs in once per process, then one `createRecord`; an "
             "Instagram post carries one library image (a 1080×1080 JPEG), fetched by its signed link.", ""]
    for key in sorted(stored):
        run = stored[key]
        lines += [f"### {run['db']}: {run['rows']} posts per network, {run['latency_ms']} ms per answer, "
                  f"load average {run['load']}", "",
                  "| channel kind | published | all out | posts/s | ÷ webhook | consumer CPU per post | requests at the fake |",
                  "|---|---|---|---|---|---|---|"]
        for r in run["results"]:
            lines.append(f"| {r['kind']} | {r['published']:,} of {r['rows']:,} | {r['seconds']} s | {r['rate']} | "
                         f"{r['vs_webhook']} | {r['consumer_cpu_ms_per_post']} ms | "
                         f"{'' if r.get('requests') is None else format(r['requests'], ',')} |")
        lines.append("")
        lines.append(NOTES)
        failed = [r for r in run["results"] if r.get("error")]
        for r in failed:
            lines.append(f"\n{r['kind']}: {r['rows'] - r['published']} not published: {r['error']}")
        lines.append("")
    return "\n".join(lines)


NOTES = """What the figures say. A network whose post is one request goes as fast as a webhook (0.9 to
1.2 of its rate in one run: the consumer's claim and record cost the same, and the sending threads
overlap the 20 ms answers), Bluesky included, its sign-in shared by the burst. Threads and
Instagram make three requests a post, in turn (container, status, publish), so each post holds a
sending thread three answers long and their rate is a third to a half of the webhook's; Instagram
also signs a link for its image and reads the media row. On a real network the rate a channel is
held to (Bluesky's 8 a minute by default, Instagram's 100 a day) is far below these figures: they
are what the consumer could do, not what a network lets through."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--pg", default=None, help="PostgreSQL admin URL: run on PostgreSQL instead of SQLite")
    parser.add_argument("--quick", action="store_true", help="40 rows; print only, keep nothing")
    args = parser.parse_args()
    rows = 40 if args.quick else args.rows
    db = "postgresql" if args.pg else "sqlite"
    with tempfile.TemporaryDirectory() as tmp:
        result = bench(db, args.pg, rows, args.latency, Path(tmp))
    record(result, RESULTS, f"networks:{db}", keep=not args.quick)
    if not args.quick:
        write_section("Network sends", render())


if __name__ == "__main__":
    main()
