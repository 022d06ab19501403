"""The general mutation run: mutmut 3.8.1 over one floor of the domain, with the tests that exercise it.

Where ``bench/mutants.py`` removes the guards' predicates one at a time, this runs a general tool over every line of
a floor: mutmut rewrites each function many ways (operators, constants, arguments, return values) and runs the tests
that reach that function against each rewrite. A rewrite no test notices *survived*; ``docs/reliability.md`` lists
each survivor examined (a missing test, since written, or equivalent with the reason).

mutmut is pinned in the ``bench`` extra, never a test dependency, so it lives in a venv of its own that has the
project's dependencies too (the shared ``.venv`` is never touched)::

    python3 -m venv ../mutmut-venv && ../mutmut-venv/bin/pip install -e '.[test,bench]'
    ../mutmut-venv/bin/python bench/mutmut.py timing            # models/timing/ (2-core box: about an hour)
    ../mutmut-venv/bin/python bench/mutmut.py timing --keep     # keep the copy, to `mutmut show <name>` in it
    ../mutmut-venv/bin/python bench/mutmut.py timing --only 'models.timing.cadence*'   # some modules' mutants only
    ../mutmut-venv/bin/python bench/mutmut.py clock             # models/clock/ with its integration tests, SQLite
    ../mutmut-venv/bin/python bench/mutmut.py --list            # the floors and their tests

The run works in a copy of the checkout (``git ls-files``, plus files not yet committed), as ``bench/mutants.py``
does: mutmut's ``mutants/`` working tree and its meta files are written there, never in the checkout. The common
settings are pyproject's ``[tool.mutmut]`` (whose selection is the ``timing`` floor's); for another floor the copy's
``only_mutate`` and test selection are rewritten from ``FLOORS``. It prints the counts per module, the line
``docs/reliability.md`` records, and writes each survivor's diff to ``--survivors`` (default
``/tmp/tickwork-mutmut-<floor>.txt``). ``--only`` (repeatable) takes mutmut's mutant-name globs (a module's,
``models.timing.wall_time*``, or one mutant's full name, to re-run it): mutmut still mutates the whole floor and maps
its tests, but runs only the mutants named, and the counts cover those alone.
"""

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from mutants import copy_checkout  # noqa: E402  (the guard run's copy of the checkout)

UNIT = "tests/unit/"
INTEGRATION = "tests/integration/"
WEB = "tests/web/"
FLOORS = {
    "timing": {
        "only_mutate": ["models/timing/*"],
        "tests": [UNIT + name for name in (
            "test_backoff.py", "test_cadence.py", "test_clock.py", "test_delay.py", "test_drip_rules.py",
            "test_posting_slots.py", "test_recurrence.py", "test_send_window.py", "test_wall_time.py",
            "test_works_rules.py", "test_parsers_take_any_input.py")],
    },
    # The engine's clock: its tests are integration tests on SQLite (a migrated file copied per test, migrated once
    # for the whole run), the ones that spawn processes left out (``slow``: each would start several interpreters for
    # every mutant it covers); the providers that are asked what became of a send (settling), and the queue page's
    # throttled channels (pacing).
    "clock": {
        "only_mutate": ["models/clock/*"],
        "tests": [INTEGRATION + name for name in (
            "test_clock_tick.py", "test_clock_queue.py", "test_dispatch_chunks.py", "test_provider_outcomes.py",
            "test_channel_limits.py", "test_idempotency_keys.py", "test_guards_alone.py", "test_guards_bite.py",
            "test_clock_rollup.py", "test_lifecycle.py", "test_publish_guard.py", "test_postmark_lookup.py",
            "test_bluesky.py")]
        + [WEB + "test_pages.py::test_the_queue_shows_a_throttled_channel_and_how_far_behind_it_is"],
        "args": ["-m", "not slow"],
        "database": True,
    },
}
MODULE = re.compile(r"^(.*)\.x[_ǁ]")


def mutmut_bin() -> str:
    found = Path(sys.executable).parent / "mutmut"
    if not found.exists():
        raise SystemExit(f"no mutmut beside {sys.executable}: run this with the bench venv's python (see above)")
    return str(found)


def configure(copy: Path, floor: dict) -> None:
    """Rewrite the copy's [tool.mutmut] selection for this floor (the common settings stay as pyproject has them)."""
    path = copy / "pyproject.toml"
    text = path.read_text()
    listed = lambda values: "[" + ", ".join(f'"{v}"' for v in values) + "]"  # noqa: E731
    text, n1 = re.subn(r"^only_mutate = .*$", "only_mutate = " + listed(floor["only_mutate"]), text, flags=re.M)
    text, n2 = re.subn(r"^pytest_add_cli_args_test_selection = \[.*?\]$",
                       "pytest_add_cli_args_test_selection = " + listed(floor["tests"]), text, flags=re.M | re.S)
    extra = "".join(f', "{arg}"' for arg in floor.get("args", []))
    text, n3 = re.subn(r"^(pytest_add_cli_args = \[.*)\]$", lambda m: m.group(1) + extra + "]", text, flags=re.M)
    if (n1, n2, n3) != (1, 1, 1):
        raise SystemExit("pyproject's [tool.mutmut] no longer has one only_mutate, one pytest_add_cli_args and one "
                         "test selection")
    path.write_text(text)


def results(copy: Path) -> list[tuple[str, str]]:
    """(mutant name, status) of every mutant, as `mutmut results --all true` reports them."""
    out = subprocess.run([mutmut_bin(), "results", "--all", "true"], cwd=copy, capture_output=True, text=True,
                         check=True).stdout
    found = []
    for line in out.splitlines():
        match = re.match(r"^\s*(\S+__mutmut_\d+): (.+)$", line)
        if match:
            found.append((match.group(1), match.group(2).strip()))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("floor", nargs="?", choices=sorted(FLOORS))
    parser.add_argument("--list", action="store_true", help="list the floors and their tests and exit")
    parser.add_argument("--max-children", type=int, default=2, help="mutants run at once (the box has 2 cores)")
    parser.add_argument("--keep", action="store_true", help="keep the copy (its path is printed) to examine survivors")
    parser.add_argument("--survivors", type=Path, help="where the survivors' diffs go")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="run only the mutants whose names match (models.timing.cadence*); repeatable")
    args = parser.parse_args(argv)
    if args.list or not args.floor:
        for name, floor in FLOORS.items():
            print(f"{name:8} {' '.join(floor['only_mutate'])}: {' '.join(floor['tests'])}")
        return 0
    floor = FLOORS[args.floor]
    tmp = Path(tempfile.mkdtemp(prefix=f"tickwork-mutmut-{args.floor}-"))
    try:
        copy = copy_checkout(tmp)
        configure(copy, floor)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        if floor.get("database"):  # the first pytest (mutmut's stats run, unmutated) migrates it for every later one
            env["TICKWORK_TEST_SQLITE_TEMPLATE"] = str(tmp / "template.db")
        started = time.monotonic()
        run = subprocess.run([mutmut_bin(), "run", "--max-children", str(args.max_children), *args.only], cwd=copy,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        minutes = (time.monotonic() - started) / 60
        if run.returncode != 0:
            print(run.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"mutmut run exited {run.returncode}")
        by_module: dict[str, Counter] = defaultdict(Counter)
        survivors = []
        for name, status in results(copy):
            if args.only and not any(fnmatch.fnmatchcase(name, glob) for glob in args.only):
                continue  # mutated, never run
            module = MODULE.match(name)
            by_module[module.group(1) if module else name][status] += 1
            if status == "survived":
                survivors.append(name)
        total = Counter()
        for module in sorted(by_module):
            counts = by_module[module]
            total += counts
            print(f"{module:40} {sum(counts.values()):5} mutants  " +
                  "  ".join(f"{status} {n}" for status, n in sorted(counts.items())))
        report = args.survivors or Path(f"/tmp/tickwork-mutmut-{args.floor}.txt")
        with report.open("w") as out:
            for name in survivors:
                shown = subprocess.run([mutmut_bin(), "show", name], cwd=copy, capture_output=True, text=True)
                out.write(f"# {name}\n{shown.stdout}\n")
        label = args.floor + "".join(f" --only {glob}" for glob in args.only)
        print(f"{label}: {sum(total.values())} mutants, killed {total['killed']}, survived {total['survived']}, "
              f"timeout {total['timeout']}, no tests {total['no tests']} ({minutes:.0f} min, load "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}); survivors' diffs in {report}")
    finally:
        if args.keep:
            print(f"the copy is kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
