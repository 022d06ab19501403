"""Benchmark: what a recurring rule costs to validate and to expand (pure time logic, no database).

    .venv/bin/python bench/recurrence.py
    .venv/bin/python bench/recurrence.py --quick    # 3 runs a figure, a check that it runs

- validation: the slowest of a set of hostile rules (parts that never meet, BYSETPOS with
  nothing to pick, a grid that misses every matching day), each the median of ``REPEATS``
  runs, against the bound of about 200 ms;
- expansion: a 14-day window, the next 500 and the last 10, for rules started three years
  before "now", each the median of ``REPEATS`` runs.

Figures are printed, one line each.
"""

from common import T0 as NOW, machine, median_ms

import argparse
from datetime import datetime, timedelta

from models.timing.recurrence import RecurrenceError, parse_recurrence

REPEATS = 15
QUICK_REPEATS = 3  # --quick: a look that the code runs, not figures to keep
STARTED = datetime(2023, 6, 1, 9, 0)
ZONE = "America/New_York"
HOSTILE = [
    "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
    "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
    "FREQ=DAILY;INTERVAL=2;BYMONTH=2;BYMONTHDAY=30",
    "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30",
    "FREQ=MONTHLY;BYDAY=MO;BYMONTHDAY=1,2,3;BYSETPOS=5",
    "FREQ=WEEKLY;INTERVAL=2;BYMONTH=2;BYDAY=MO;BYSETPOS=-2",
    "FREQ=DAILY;INTERVAL=7;BYDAY=MO",  # from a Tuesday: the grid never lands on a Monday
    "FREQ=DAILY;INTERVAL=3;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
    "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
    "FREQ=YEARLY;BYDAY=2TU;BYMONTHDAY=5",  # the second Tuesday of a year is never a 5th
    "FREQ=DAILY;COUNT=999999999999",
    "FREQ=DAILY;" + "x" * 10_000,
]
RULES = [
    "FREQ=DAILY",
    "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR",
    "FREQ=MONTHLY;BYDAY=-1FR",
    "FREQ=HOURLY",
    "FREQ=DAILY;COUNT=5000",
    "FREQ=HOURLY;BYDAY=MO;COUNT=100000",
]


def validate(rrule: str) -> None:
    """Validate one rule from a Tuesday, as the API would; a refusal is the expected outcome."""
    try:
        parse_recurrence(rrule, starts_local=datetime(2026, 6, 2, 9, 0), zone=ZONE)
    except RecurrenceError:
        pass


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the median of {QUICK_REPEATS} runs, not {REPEATS}")
    repeats = QUICK_REPEATS if parser.parse_args().quick else REPEATS
    print(f"# {machine()}")
    timed = sorted(((median_ms(lambda: validate(rrule), repeats), rrule) for rrule in HOSTILE), reverse=True)
    for ms, rrule in timed:
        print(f"validate {rrule[:60]:60} {ms:8.2f} ms")
    print(f"validation worst case: {timed[0][0]:.1f} ms ({timed[0][1][:60]})")
    for rrule in RULES:
        rule = parse_recurrence(rrule, starts_local=STARTED, zone=ZONE)
        window = median_ms(lambda: rule.occurrences_between(NOW, NOW + timedelta(days=14)), repeats)
        following = median_ms(lambda: rule.next_occurrences(NOW, 500), repeats)
        last = median_ms(lambda: rule.last_occurrences(NOW, 10), repeats)
        print(f"3-year-old {rrule:36} 14-day window {window:6.3f} ms   next 500 {following:6.2f} ms   "
              f"last 10 {last:6.2f} ms")


if __name__ == "__main__":
    main()
