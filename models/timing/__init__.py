"""Pure time logic: the clock, wall time to UTC, backoff. No database, no Flask."""
