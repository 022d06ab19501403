"""Backups of a single box: a consistent copy of the SQLite app database and queue while Tickwork
runs, and a restore that fails, as outcome unknown, every row that may have gone out after it."""
