"""The peers beside Tickwork, from one run of the shared peers' driver.

    ../shared/peers/run.sh 2 | tee /tmp/peers.log
    .venv/bin/python bench/peers.py /tmp/peers.log        # keeps the run, renders docs/benchmarks.md "## Peers"

`run.sh` drains 10,000 due no-op jobs on this machine's PostgreSQL with pg-boss (4 workers, batch
1000 and 100) and graphile-worker (concurrency 4 and 16), then runs `bench/clock.py drain` (Tickwork's
`log` drain on SQLite and PostgreSQL), each round in turn; it prints one JSON line per system.
The ratios are taken within each round, so the box's drift between rounds does not enter them.
"""

from common import ROOT, machine, write_section

import json
import sys
from datetime import datetime, timezone

RESULTS = ROOT / "bench" / ".peers-results.json"


def rounds(lines: list[str]) -> list[dict]:
    """The run's rounds: each the peers' jobs/s by setting and Tickwork's drain results by database."""
    out: list[dict] = []
    current: dict = {}
    for line in lines:
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry["peer"] == "tickwork":
            result = entry["result"]
            current.setdefault("tickwork", {})[result["db"]] = result
            if result["db"] == "postgresql":
                out.append(current)
                current = {}
            continue
        name = entry["peer"].split(" ")[0]
        setting = f"batch {entry['batch']}" if "batch" in entry else f"concurrency {entry['concurrency']}"
        current.setdefault("peers", {})[f"{name}, {setting}"] = entry["jobs_per_s"]
    return out


def render(run: dict) -> str:
    lines = [__doc__.split("\n\n", 2)[2].strip(), "",
             f"Machine: {machine()}, shared with other work; measured {run['measured']}.", "",
             "| round | pg-boss, batch 1000 | pg-boss, batch 100 | graphile-worker, concurrency 4 | graphile-worker, "
             "concurrency 16 | Tickwork PostgreSQL (raw loop) | Tickwork SQLite (raw loop) | PostgreSQL ÷ graphile 16 "
             "| PostgreSQL ÷ pg-boss 1000 | SQLite ÷ its raw loop |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for n, r in enumerate(run["rounds"], 1):
        peers, ours = r["peers"], r["tickwork"]
        pg, lite = ours["postgresql"], ours["sqlite"]
        vs_graphile = pg["full_rate"] / peers["graphile-worker, concurrency 16"]
        vs_boss = pg["full_rate"] / peers["pg-boss, batch 1000"]
        lines.append(f"| {n} | {peers['pg-boss, batch 1000']:,}/s | {peers['pg-boss, batch 100']:,}/s | "
                     f"{peers['graphile-worker, concurrency 4']:,}/s | {peers['graphile-worker, concurrency 16']:,}/s | "
                     f"{pg['full_rate']:,}/s ({max(pg['raw_rate_1'], pg.get('raw_rate_4') or 0):,}/s) | "
                     f"{lite['full_rate']:,}/s ({lite['raw_rate_1']:,}/s) | {vs_graphile:.2f} | {vs_boss:.2f} | "
                     f"{lite['ratio']} |")
        verdicts.append(f"- round {n}: PostgreSQL drain at least graphile-worker at concurrency 16: "
                        f"{'met' if vs_graphile >= 1 else 'missed'} ({vs_graphile:.2f}×); at least half of pg-boss at "
                        f"batch 1000: {'met' if vs_boss >= 0.5 else 'missed'} ({vs_boss:.2f}×; moonshot, ahead of it: "
                        f"{'met' if vs_boss >= 1 else 'missed'}); SQLite at least 0.5 of its raw loop: "
                        f"{'met' if lite['ratio'] >= 0.5 else 'missed'} ({lite['ratio']}).")
    return "\n".join(lines + ["", "### Against the targets", ""] + verdicts)


def main() -> None:
    lines = open(sys.argv[1]).read().splitlines() if len(sys.argv) > 1 else sys.stdin.read().splitlines()
    run = {"measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "rounds": rounds(lines)}
    if not run["rounds"]:
        raise SystemExit("no complete round in the peers' output")
    RESULTS.write_text(json.dumps(run, indent=1))
    write_section("Peers", render(run))
    print(render(run))


if __name__ == "__main__":
    main()
