"""Scheduled actions: the table, its lifecycle (every status change), the publish guard, scheduling, filters."""
