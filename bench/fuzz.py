"""The long fuzzing run: Schemathesis drives the whole API, hundreds of examples per operation.

For each database (a fresh one, built by the migrations) this starts Tickwork on a loopback
port, with a workspace, its log channel, an admin's token and one object of every kind the
document's paths name (an action, a post, a recurring rule, a work, a campaign, a contact),
then runs ``schemathesis run`` against ``/api/v1/openapi.json`` with every phase (the
document's examples, coverage, fuzzing, and stateful sequences that follow the document's
links), checking for 5xx answers and answers that break the document (status, content type,
schema). The suite runs the same checks at 25 examples per operation on SQLite
(``tests/integration/test_openapi.py``); this is the long version, on both databases.

The figures come from the server itself, not from Schemathesis: a WSGI wrapper counts every
request that reached Tickwork and every 5xx it answered, and keeps the first few 5xx to show.

    .venv/bin/python bench/fuzz.py                                   # SQLite and PostgreSQL
    .venv/bin/python bench/fuzz.py --examples 300 --max-time 600     # longer
    .venv/bin/python bench/fuzz.py --databases sqlite --no-write     # a quicker look

Figures are printed and written under "## Fuzzing the API" in docs/reliability.md.
"""

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, drop_pg, machine, make_app, migrate, pg_database, write_section  # noqa: E402

DOCUMENT = "/api/v1/openapi.json"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
SEED = 20261201


@dataclass
class Tally:
    """What reached the server: requests, 5xx answers, and the first few 5xx to show."""

    requests: int = 0
    server_errors: int = 0
    examples: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, app):
        """``app`` as a WSGI app that counts what it answers."""

        def counted(environ, start_response):
            def start(status, headers, exc_info=None):
                code = int(status.split(" ", 1)[0])
                with self.lock:
                    self.requests += 1
                    if code >= 500:
                        self.server_errors += 1
                        if len(self.examples) < 5:
                            self.examples.append(f"{code} {environ['REQUEST_METHOD']} {environ.get('PATH_INFO')}")
                return start_response(status, headers, exc_info)

            return app(environ, start)

        return counted


def seed_workspace(app) -> str:
    """A workspace, its log channel, an admin with a token, and one object of every kind; returns the token."""
    from models.accounts.members import add_member
    from models.accounts.tables import Workspace
    from models.accounts.tokens import issue_token
    from models.accounts.workspaces import create_workspace
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            workspace = create_workspace(session, name="Fuzz", zone="America/New_York", now=now)
            session.add(Channel(workspace_id=workspace.id, name="main", kind="log", config={}, created_at=now))
            member = add_member(session, workspace.id, email="admin@fuzz.test", role="admin",
                                password="fuzzing the api", now=now)
            token = issue_token(session, member.user, session.get(Workspace, workspace.id), now)
    client, auth = app.test_client(), {"Authorization": f"Bearer {token}"}
    made = [
        client.post("/api/v1/actions", headers=auth, json={
            "action_type": "send_email", "channel": "main", "target_key": "ada@example.com", "payload": {},
            "local_time": "2027-01-05T09:00"}),
        client.post("/api/v1/posts", headers=auth, json={
            "body": "Hello", "targets": ["main"], "local_time": "2027-01-04T09:00"}),
        client.post("/api/v1/recurring", headers=auth, json={
            "action_type": "send_email", "channel": "main", "target_key": "ops@example.com", "payload": {},
            "rrule": "FREQ=DAILY", "starts_local": "2027-01-04T08:00"}),
        client.post("/api/v1/works", headers=auth, json={"name": "Digest", "pipeline": "log"}),
        client.post("/api/v1/campaigns", headers=auth, json={
            "name": "Onboarding", "channel": "main", "steps": [{"delay": "P1D", "subject": "Hi", "body": "Hello"}]}),
        client.post("/api/v1/contacts", headers=auth, json={"email": "grace@example.com"}),
    ]
    for answer in made:
        if answer.status_code != 201:
            raise SystemExit(f"could not seed the workspace: {answer.status_code} {answer.get_data(as_text=True)}")
    return token


def fuzz(url: str, *, examples: int, max_time: int, workdir: Path) -> dict:
    """Serve Tickwork on ``url``'s database and let Schemathesis loose on it; the figures of the run."""
    from werkzeug.serving import make_server

    app = make_app(url, frozen_at=None, TICKWORK_API_RATE_LIMIT="1000000 per minute",
                   TICKWORK_BASE_URL="https://tickwork.example",
                   # A fuzzed work may ask its log pipeline for an hour; Run Now runs it inline here.
                   TICKWORK_POLICY={"work_pipeline_timeout": 1, "work_task_timeout": 2, "work_stuck_timeout": 3})
    token = seed_workspace(app)
    tally = Tally()
    server = make_server("127.0.0.1", 0, tally.wrap(app), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    started, load = time.monotonic(), os.getloadavg()[0]
    try:
        run = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "run", f"http://127.0.0.1:{server.port}{DOCUMENT}",
             "-H", f"Authorization: Bearer {token}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance",
             "--max-examples", str(examples), "--max-time", str(max_time), "--seed", str(SEED),
             "--generation-database", "none", "--workers", "1", "--no-color", "--continue-on-failure"],
            cwd=workdir, capture_output=True, text=True, timeout=max_time * 3 + 120)
    finally:
        server.shutdown()
        thread.join(timeout=10)
        with app.app_context():
            from models.core.database import db

            db.engine.dispose()
    seconds = time.monotonic() - started
    report = run.stdout + run.stderr
    generated = re.search(r"(\d+) generated", report)
    tested = re.search(r"Tested:\s*(\d+)", report)
    failures = re.findall(r"^\s*\d+\. (.+)$", report, re.M)
    return {"requests": tally.requests, "server_errors": tally.server_errors, "examples": tally.examples,
            "operations": int(tested.group(1)) if tested else None,
            "cases": int(generated.group(1)) if generated else None,
            "seconds": seconds, "load": load, "exit": run.returncode, "failures": failures[:10],
            "summary": report[report.rfind("SUMMARY"):][:1500] if "SUMMARY" in report else report[-1500:]}


def render(results: dict, *, examples: int, max_time: int) -> str:
    """The document's section for these figures."""
    rows = "\n".join(
        f"| {name} | {f['requests']:,} | {f['server_errors']} | {f['cases'] or 0:,} | {f['operations']} | "
        f"{(f['cases'] or 0) // max(f['operations'] or 1, 1)} | "
        f"{'none' if f['exit'] == 0 else 'see below'} | {f['seconds']:.0f} s | {f['load']:.1f} |"
        for name, f in results.items())
    failing = [f"- {name}: " + "; ".join(f["failures"] or f["examples"] or ["exit " + str(f["exit"])])
               for name, f in results.items() if f["exit"]]
    return f"""Schemathesis drives every operation of the OpenAPI document (`/api/v1/openapi.json`, the
work-schedule routes and the public pipeline callback included) against a live server, through
all its phases: the document's examples, coverage cases, random requests (valid and invalid) and
stateful sequences, up to {examples} examples per operation, seed {SEED}. Each database's run stops
after {max_time} s (Schemathesis `--max-time`), so the cases per operation below are what fit in
that time on this machine beside the load the column names (the 1-minute load average when the
run began, on 2 cores). Checked: no 5xx, and every status code, content type and body as the
document says. Requests and 5xx are counted by the server itself, not by the fuzzer.

| database | requests sent | 5xx seen | test cases | operations | cases per operation | answers outside the document | time | load |
|---|---|---|---|---|---|---|---|---|
{rows}

{chr(10).join(failing) if failing else "Nothing failed a check."}

Measured on {machine()}. Reproduce with the command below; a longer `--max-time` gives
more cases per operation (without the two options the script runs 600 s per database):

    .venv/bin/python bench/fuzz.py --examples {examples} --max-time {max_time}

The suite runs the same checks on SQLite at 25 examples per operation
(`tests/integration/test_openapi.py`), so a route that answers 5xx fails CI.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", default="sqlite,postgresql", help="sqlite, postgresql or both")
    parser.add_argument("--examples", type=int, default=300, help="examples per operation in each round")
    parser.add_argument("--max-time", type=int, default=600,
                        help="seconds of each database's run: fuzzing and stateful rounds repeat until spent")
    parser.add_argument("--pg", default=PG_ADMIN, help="a PostgreSQL URL allowed to create databases")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/reliability.md alone")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("webapp").setLevel(logging.CRITICAL)  # a 5xx is counted here; its traceback is noise

    results = {}
    with tempfile.TemporaryDirectory(prefix="tickwork-fuzz-") as folder:
        workdir = Path(folder)
        for name in args.databases.split(","):
            if name == "sqlite":
                url = f"sqlite:///{workdir / 'fuzz.sqlite'}"
                migrate(url)
                results[name] = fuzz(url, examples=args.examples, max_time=args.max_time, workdir=workdir)
            elif name == "postgresql":
                database = f"tickwork_fuzz_{uuid.uuid4().hex[:8]}"
                url = pg_database(args.pg, database)
                try:
                    migrate(url)
                    results[name] = fuzz(url, examples=args.examples, max_time=args.max_time, workdir=workdir)
                finally:
                    drop_pg(args.pg, database)
            else:
                raise SystemExit(f"unknown database {name!r}: sqlite or postgresql")
            figures = results[name]
            print(f"{name}: {figures['requests']} requests sent, {figures['server_errors']} answered 5xx, "
                  f"{figures['cases']} test cases over {figures['operations']} operations, "
                  f"{figures['seconds']:.0f} s, Schemathesis exit {figures['exit']}")
            for example in figures["examples"]:
                print("  5xx:", example)
            if figures["exit"]:
                print(figures["summary"])

    body = render(results, examples=args.examples, max_time=args.max_time)
    if not args.no_write:
        write_section("Fuzzing the API", body, document="reliability.md")
        print(f"written to {ROOT / 'docs' / 'reliability.md'}")
    if any(f["server_errors"] or f["exit"] for f in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
