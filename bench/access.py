"""The access and hostile-input figures for docs/reliability.md, computed by the tests that check them.

Runs the access matrix, the hostile-input walker and the garbage-zone walk (``tests/web/``)
with ``TICKWORK_ACCESS_REPORT`` set, so each test writes what it tried and what it saw, and
prints the section (``--write`` puts it into ``docs/reliability.md``). The tests fail on any
5xx, so a section is written only from a run in which every one of them passed.

    .venv/bin/python bench/access.py [--write]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, machine, write_section  # noqa: E402  (after the checkout is on the path)

TESTS = ["tests/web/test_access_matrix.py", "tests/web/test_hostile_input.py"]
COMMAND = ".venv/bin/python bench/access.py"


def run() -> tuple[list[dict], float]:
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "access.jsonl")
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *TESTS],
                              cwd=ROOT, env=dict(os.environ, TICKWORK_ACCESS_REPORT=report))
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"the access tests failed (exit {done.returncode}); no figures written")
        with open(report, encoding="utf-8") as lines:
            return [json.loads(line) for line in lines], seconds


def section(rows: list[dict], seconds: float) -> str:
    by = {}
    for row in rows:
        by.setdefault(row["test"], []).append(row)

    def each(test):
        return ", ".join(f"{r['backend']}: {r['requests']}" for r in by.get(test, [])) or "not run"

    def errors(test):
        return sum(r["server_errors"] for r in by.get(test, []))

    cross = by["cross_workspace"][0]
    roles = by["roles"][0]
    walk = by["hostile_walk"][0]
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(walk["by_status"].items()))
    return f"""
What an outsider can reach, and what no input can break, tried from the url map so a route added
later is tried too (`tests/web/test_access_matrix.py`, `tests/web/test_hostile_input.py`). Every
request below had to reach its view (not a redirect to sign-in, a CSRF or bearer-token refusal),
and every refused one had to leave every table of the database as it was. Run on {machine()}:
{seconds:.0f} s for the two files on both databases, building the two template databases included.

| what was tried | requests | 5xx seen |
|---|---|---|
| {cross['routes']} object routes and methods (dashboard and API, {len(cross['id_kinds'])} id kinds: {', '.join(cross['id_kinds'])}) with the other of {cross['workspaces']} workspaces' ids, as its admin: 404 and nothing changed | {each('cross_workspace')} | {errors('cross_workspace')} |
| {roles['routes']} state-changing routes × {roles['roles']} roles, against the role table (`LEAST_ROLE`, from docs/dashboard.md): {roles['refused']} refusals (403, nothing changed), the rest reached the view | {each('roles')} | {errors('roles')} |
| every route with an id, with ids no row could have (0, 2³¹, 10²⁵) | {each('impossible_ids')} | {errors('impossible_ids')} |
| {walk['routes']} routes × {walk['hostile_strings']} hostile strings (lone surrogates, NUL, RTL override, 1 MB, HTML, template syntax, path traversal, format and SQL, a 40-digit number) in every path, query and form field the walker knows | {each('hostile_walk')} | {errors('hostile_walk')} |
| every page, fragment and API read of a workspace whose stored zone is garbage, and again with a sound zone | {each('garbage_zone')} | {errors('garbage_zone')} |

The walker's answers, by status: {statuses}. The 5xx column is zero because the tests fail on
any: before this walk existed, the dashboard pages that show a time (an action's page, the
calendar, the queue...) answered 500 for a workspace whose stored zone was garbage (now a banner, "times are shown in UTC until an admin fixes it in Settings"), and
the earlier walker never noticed, having signed itself out at `POST /logout`. The public routes of `webapp/public.py` are the only ones not
tried; a state-changing route with no line in the role table, or a route taking an id kind the
matrix does not furnish, fails the tests.

Reproduce: `{COMMAND}` (add `--write` to refresh this section), or
`TICKWORK_ACCESS_REPORT=/tmp/access.jsonl .venv/bin/python -m pytest -n 0 {' '.join(TESTS)}` for the raw counts.
"""


if __name__ == "__main__":
    rows, seconds = run()
    body = section(rows, seconds)
    print(body)
    if "--write" in sys.argv:
        write_section("Access and hostile input", body, document="reliability.md")
