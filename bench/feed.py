"""Benchmark: four calendar-feed fetches at once against the dashboard's /queue, through the web
process ``tickwork serve`` starts (gunicorn, two sync workers), on SQLite.

One workspace (America/New_York) holds about 6,700 feed events in the window: 5,000 ad-hoc
actions and five daily recurring rules' occurrences (minted or planned). A signed-in member asks
for ``/queue`` every 100 ms while, in turn:

1. nothing else runs (the baseline);
2. four fetches of the feed start at once, nothing built yet (cold: each web process builds it
   once; a fetch that arrives while it is built waits for that build);
3. four fetches at once again, the feed built (warm: the kept bytes are sent);
4. four fetches at once with the ETag a calendar app keeps (304, nothing built or sent).

    .venv/bin/python bench/feed.py [--actions 5000]

Figures are printed and written under "## Calendar feed under load" in docs/benchmarks.md.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, SECRET, T0, environment, machine, make_app, migrate, write_section  # noqa: E402

BASE_URL = "https://tickwork.example"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
RULES = 5


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_workspace(url: str, actions: int) -> dict:
    """The workspace, its actions and rules, a feed token and a member's sign-in; written through the domain."""
    from models.accounts.feeds import issue_feed_token
    from models.actions.scheduling import NewAction, insert_actions
    from models.actions.tables import Origin
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from tests.conftest import WORLD_PASSWORD, make_world
    from tests.integration.recurring_helpers import expand

    app = make_app(url, frozen_at=None, TICKWORK_BASE_URL=BASE_URL, TICKWORK_API_RATE_LIMIT="100000 per minute")
    world = make_world(app)
    client = app.test_client()
    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            channel = session.get(Channel, session.query(Channel.id).filter_by(workspace_id=world.workspace_id).scalar())
            news = [NewAction(action_type="send_reminder", channel=channel, target_key=f"t{n}@example.test",
                              payload={"title": f"Reminder {n}"},
                              publish_at=now + timedelta(hours=1) + timedelta(minutes=97 * n))
                    for n in range(actions)]
            for start in range(0, len(news), 500):
                insert_actions(session, world.workspace_id, news[start:start + 500], now=now,
                               actor=Actor(label="bench"), origin=Origin.PERSON)
    for n in range(RULES):
        made = client.post("/api/v1/recurring", headers=world.auth("marketer"), json={
            "action_type": "send_report", "channel": "main", "target_key": f"list{n}@example.test",
            "payload": {"title": f"Digest {n}"}, "rrule": "FREQ=DAILY",
            "starts_local": (now + timedelta(days=1)).strftime("%Y-%m-%dT") + f"{8 + n:02d}:00"})
        assert made.status_code == 201, made.json
    expand(app)
    with app.app_context(), write_session() as session:
        raw = issue_feed_token(session, world.workspace_id, world.users["marketer"], now=runtime().now())
    from models.core.database import db

    with app.app_context():
        db.engine.dispose()
    return {"feed": f"/calendar/feed/{raw}.ics", "email": "marketer@acme.test", "password": WORLD_PASSWORD}


def sign_in(base: str, email: str, password: str):
    import httpx

    client = httpx.Client(base_url=base, timeout=120)
    page = client.get("/login")
    token = TOKEN.search(page.text).group(1)
    answer = client.post("/login", data={"email": email, "password": password, "csrf_token": token})
    assert answer.status_code == 303, answer.text[:300]
    return client


def watch_queue(client, stop: threading.Event) -> list[float]:
    """``/queue`` every 100 ms until ``stop``; each answer's time in ms."""
    times = []
    while not stop.is_set():
        started = time.perf_counter()
        answer = client.get("/queue")
        assert answer.status_code == 200, answer.status_code
        times.append((time.perf_counter() - started) * 1000)
        stop.wait(0.1)
    return times


def four_fetches(base: str, path: str, headers: dict | None = None) -> list[tuple[int, float, int]]:
    import httpx

    results = []

    def one():
        started = time.perf_counter()
        answer = httpx.get(base + path, headers=headers or {}, timeout=300)
        results.append((answer.status_code, time.perf_counter() - started, len(answer.content),
                        answer.headers.get("ETag")))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def phase(base: str, queue_client, path: str, headers: dict | None = None, *, alone: float = 0.0) -> dict:
    stop = threading.Event()
    box = {}
    watcher = threading.Thread(target=lambda: box.setdefault("queue", watch_queue(queue_client, stop)))
    watcher.start()
    time.sleep(0.5)
    if alone:
        time.sleep(alone)
        fetched = []
    else:
        fetched = four_fetches(base, path, headers)
        time.sleep(0.3)
    stop.set()
    watcher.join()
    queue = box["queue"]
    return {"fetches": fetched, "queue_median": statistics.median(queue), "queue_max": max(queue),
            "queue_n": len(queue)}


def run(actions: int) -> dict:
    from jobs.serve import Supervisor

    with tempfile.TemporaryDirectory(prefix="tickwork-bench-feed-") as folder:
        url = f"sqlite:///{folder}/bench.db"
        migrate(url)
        started = time.perf_counter()
        made = build_workspace(url, actions)
        print(f"workspace built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        port = _free_port()
        [web] = [c for c in Supervisor.for_single_box(host="127.0.0.1", port=port).children if c.name == "web"]
        env = environment(url, TICKWORK_BASE_URL=BASE_URL, TICKWORK_FEED_RATE_LIMIT="1000 per minute")
        log = open(Path(folder) / "web.log", "w")
        process = subprocess.Popen(web.argv, cwd=ROOT, env=env, stdout=log, stderr=log)
        base = f"http://127.0.0.1:{port}"
        try:
            import httpx

            deadline = time.monotonic() + 120
            while True:  # any answer will do: without a consumer /healthz says 503, yet the server is up
                try:
                    httpx.get(base + "/healthz", timeout=5)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            queue_client = sign_in(base, made["email"], made["password"])
            queue_client.get("/queue")
            figures = {"baseline": phase(base, queue_client, made["feed"], alone=3.0)}
            figures["cold"] = phase(base, queue_client, made["feed"])
            figures["warm"] = phase(base, queue_client, made["feed"])
            etag = figures["warm"]["fetches"][0][3]
            figures["304"] = phase(base, queue_client, made["feed"], {"If-None-Match": etag})
            import icalendar

            body = httpx.get(base + made["feed"], timeout=300).content
            figures["events"] = len(icalendar.Calendar.from_ical(body).walk("VEVENT"))
            figures["size"] = len(body)
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()
    return figures


def report(figures: dict) -> str:
    rows = ["| phase | four feed fetches (status: longest) | /queue median | /queue longest | /queue answers |",
            "|---|---|---:|---:|---:|"]
    names = {"baseline": "nothing else", "cold": "4 fetches, nothing built", "warm": "4 fetches, built",
             "304": "4 fetches with the ETag"}
    for key, name in names.items():
        got = figures[key]
        fetched = (f"{got['fetches'][0][0]}: {max(f[1] for f in got['fetches']):.2f} s"
                   if got["fetches"] else "-")
        rows.append(f"| {name} | {fetched} | {got['queue_median']:.0f} ms | {got['queue_max']:.0f} ms | "
                    f"{got['queue_n']} |")
    return "\n".join([
        f"Measured by `bench/feed.py` on {machine()}, on a machine other work was sharing: the web process "
        f"`tickwork serve` starts (gunicorn, two sync workers), SQLite; a feed of {figures['events']:,} events, "
        f"{figures['size'] / 1024:,.0f} KiB. A signed-in member asks for `/queue` every 100 ms while four fetches "
        "of the feed run at once. Each web process builds a feed once per version of the workspace's schedule "
        "and keeps it; a fetch with the ETag is a 304. Each feed address may fetch `TICKWORK_FEED_RATE_LIMIT` "
        "times (60 an hour by default).",
        "", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actions", type=int, default=5000)
    args = parser.parse_args()
    figures = run(args.actions)
    text = report(figures)
    print(text)
    write_section("Calendar feed under load", text)


if __name__ == "__main__":
    main()
