"""A mutation run over the engine's guards: remove one predicate of one guard, run that guard's tests, put it back.

The guards and their mutants are listed in ``bench/guards.toml``. Each ``[[mutant]]`` names a file, the text of the
guard as written (``find``, exactly once in the file), the text with one predicate or one gate's condition taken
out (``replace``), and the tests that must fail without it (run on SQLite, nothing else; ``db = "postgresql"`` for
a statement only PostgreSQL runs). A mutant the tests do not
notice *survived*: a guard no test defends. A mutant listed with ``equivalent = "why"`` is not run: removing that
predicate changes no behaviour (the reason says which other guard makes it redundant).

The run works in a copy of the checkout (``git ls-files``, plus files not yet committed), so the tree it was started
from is never changed and other test runs beside it are not disturbed::

    .venv/bin/python bench/mutants.py                    # every mutant (on a 2-core box: about a minute each)
    .venv/bin/python bench/mutants.py --only works.      # the mutants whose id starts so
    .venv/bin/python bench/mutants.py --list             # what would run

It prints one line per mutant (``killed`` with the first failing test, ``survived``, ``equivalent``) and ends with
the figures line ``docs/reliability.md`` records: ``guard mutants: N, killed K, equivalent E, S survived``. It is a
bench script: minutes to hours, never part of CI (``tests/unit/test_guards_listed.py`` keeps the list honest).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUARDS = ROOT / "bench" / "guards.toml"
FAILED_TEST = re.compile(r"^FAILED (\S+)", re.MULTILINE)


def load(path: Path = GUARDS) -> dict:
    return tomllib.loads(path.read_text())


def copy_checkout(into: Path) -> Path:
    """The checkout's files (committed and not) in ``into``; the venv is shared, the copy's code shadows it."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def check_copy_is_imported(copy: Path) -> None:
    found = subprocess.run([sys.executable, "-c", "import models; print(models.__file__)"], cwd=copy,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not found.startswith(str(copy)):
        raise SystemExit(f"the copy's code is not the one imported ({found}); refusing to run")


def node_ids(mutant: dict) -> list[str]:
    """The mutant's tests as pytest node ids: a parametrized case (``test_x[retry]``) carries the database the test
    runs on first (``test_x[sqlite-retry]``), as the suite's backend parametrization names it."""
    db = mutant.get("db", "sqlite")
    return [test.replace("[", f"[{db}-", 1) if test.endswith("]") else test for test in mutant["tests"]]


def run_mutant(copy: Path, mutant: dict, timeout: int) -> tuple[str, str, float]:
    """(verdict, detail, seconds) of one mutant: killed / survived / broken (its text is not in the file once)."""
    path = copy / mutant["file"]
    original = path.read_text()
    if original.count(mutant["find"]) != 1:
        return "broken", f"'find' occurs {original.count(mutant['find'])} times in {mutant['file']}", 0.0
    path.write_text(original.replace(mutant["find"], mutant["replace"]))
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-x",
                                 "--db", mutant.get("db", "sqlite"), "-p", "no:cacheprovider", *node_ids(mutant)],
                                cwd=copy, capture_output=True, text=True, timeout=timeout,
                                env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    except subprocess.TimeoutExpired:
        return "killed", f"timed out after {timeout}s", time.monotonic() - started
    finally:
        path.write_text(original)
    seconds = time.monotonic() - started
    if result.returncode == 0:
        return "survived", "every test passed", seconds
    if result.returncode == 1:
        failed = FAILED_TEST.search(result.stdout)
        return "killed", failed.group(1) if failed else "a test failed", seconds
    return "broken", f"pytest exit {result.returncode}: {result.stdout[-300:]}{result.stderr[-300:]}", seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default="", help="run the mutants whose id starts with one of these (comma-separated)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one mutant's tests may take")
    args = parser.parse_args(argv)
    mutants = load()["mutant"]
    prefixes = [p for p in args.only.split(",") if p]
    chosen = [m for m in mutants if not prefixes or any(m["id"].startswith(p) for p in prefixes)]
    if args.list:
        for mutant in chosen:
            print(f"{mutant['id']:48} {'equivalent' if 'equivalent' in mutant else ' '.join(mutant['tests'])}")
        return 0
    counts = {"killed": 0, "equivalent": 0, "survived": 0, "broken": 0}
    with tempfile.TemporaryDirectory(prefix="tickwork-mutants-") as tmp:
        copy = copy_checkout(Path(tmp))
        check_copy_is_imported(copy)
        for mutant in chosen:
            if "equivalent" in mutant:
                counts["equivalent"] += 1
                print(f"{mutant['id']:48} equivalent  {mutant['equivalent']}", flush=True)
                continue
            verdict, detail, seconds = run_mutant(copy, mutant, args.timeout)
            counts[verdict] += 1
            print(f"{mutant['id']:48} {verdict:10}  {detail}  ({seconds:.0f}s)", flush=True)
    total = sum(counts.values())
    print(f"guard mutants: {total}, killed {counts['killed']}, equivalent {counts['equivalent']}, "
          f"{counts['survived']} survived" + (f", {counts['broken']} broken" if counts["broken"] else ""))
    return 1 if counts["survived"] or counts["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
