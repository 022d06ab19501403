"""How long the command line takes to start: ``tickwork --help`` and ``tickwork token create`` against
``python -c "import flask"``, measured in the same run (wall and CPU time of the child, medians of a
few runs), so a loaded box moves all three together and the ratio is what counts. The target is at
most 3x ``import flask`` for both.

``--before PATH`` measures the code of another checkout of Tickwork too (an export of an older
commit, run by this interpreter with PATH first on ``sys.path``), interleaved with the rest, so a
change's before and after are figures of one run.

Usage: ``.venv/bin/python bench/cli.py [--runs 3] [--before PATH] [--no-write]``
"""

from common import ROOT, SECRET, machine, migrate, write_section

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKWORK = str(Path(sys.executable).with_name("tickwork"))
FLOOR = "python -c 'import click, sqlalchemy.orm, sqlalchemy.dialects.sqlite'"


def timed(command: list[str], env: dict, stdin: str | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="another checkout's code, measured alongside")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tickwork-cli-bench-"))
    url = f"sqlite:///{folder / 'tickwork.db'}"
    migrate(url)
    env = {**os.environ, "TICKWORK_DATABASE_URL": url, "TICKWORK_SECRET_KEY": SECRET, "TICKWORK_QUEUE_URL": "immediate"}
    subprocess.run([TICKWORK, "workspace", "create", "Bench", "--timezone", "UTC"], env=env, cwd=ROOT, check=True,
                   capture_output=True)
    subprocess.run([TICKWORK, "user", "create", "a@bench.test", "--workspace", "Bench", "--role", "admin"], env=env,
                   cwd=ROOT, input="a long bench password\n", check=True, capture_output=True, text=True)
    commands = {
        "python -c 'import flask'": [sys.executable, "-c", "import flask"],
        # What a command on the database alone cannot do without: its floor.
        FLOOR: [sys.executable, "-c", FLOOR.removeprefix("python -c '").removesuffix("'")],
        "tickwork --help": [TICKWORK, "--help"],
        "tickwork token create": [TICKWORK, "token", "create", "a@bench.test", "--workspace", "Bench"],
    }
    envs = {name: env for name in commands}
    if args.before:
        before_env = {**env, "PYTHONPATH": str(args.before.resolve())}
        for name in ("tickwork --help", "tickwork token create"):
            commands[f"{name} (before)"] = commands[name]
            envs[f"{name} (before)"] = before_env
    for name, command in commands.items():  # uncounted: the first run of a checkout compiles its bytecode
        timed(command, envs[name])
    figures = {}
    for _ in range(args.runs):  # interleaved, so a burst of load hits every command alike
        for name, command in commands.items():
            figures.setdefault(name, []).append(timed(command, envs[name]))
    medians = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for name, runs in figures.items()}
    base_wall, base_cpu = medians["python -c 'import flask'"]
    rows = [f"| `{name.removesuffix(' (before)')}`{' (before)' if name.endswith('(before)') else ''} | {wall:.2f} | "
            f"{cpu:.2f} | {cpu / base_cpu:.1f}x |" for name, (wall, cpu) in medians.items()]
    body = (f"`bench/cli.py`, {args.runs} interleaved runs each, medians; {machine()}. CPU time is the child's "
            "user + system time, which load on a shared box moves less than the wall clock; the target is at "
            "most 3x `import flask` in CPU time.\n\n| command | wall s | CPU s | CPU vs `import flask` |\n|---|---|---|---|\n"
            + "\n".join(rows))
    if args.before:
        body += (f"\n\n(before): the same commands run on the code of `{args.before.name}` (`--before`), measured "
                 "in the same run.")
    missed = {name: cpu / base_cpu for name, (_, cpu) in medians.items()
              if name.startswith("tickwork") and not name.endswith("(before)") and cpu / base_cpu > 3}
    body += ("\n\nTarget met." if not missed else
             "\n\nTarget not met by " + ", ".join(f"`{name}` ({ratio:.1f}x)" for name, ratio in missed.items())
             + ".")
    body += ("\n\n`--help` lists its commands from a table (webapp/command_line.py) and imports no more than Flask's "
             "command-line group. `token`, `user` and `workspace create` build no app and import no Flask (webapp/database_commands.py): "
             "they check the settings as a starting app does, then open the database with SQLAlchemy alone. What "
             "they still import is click, SQLAlchemy's ORM and its SQLite dialect (the `import click, sqlalchemy.orm, "
             f"...` row: {medians[FLOOR][1] / base_cpu:.1f}x by themselves, most of their time) and the accounts floor "
             "of the domain, whose models and rules they run, as the app does; the margin under 3x is thin, and "
             "what fills it is that floor. Every other command builds the app, which imports every wing and the job "
             "machinery.")
    print(body)
    if not args.no_write:
        write_section("Command line start-up", body)


if __name__ == "__main__":
    main()
