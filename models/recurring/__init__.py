"""Recurring rules: "every Tuesday at 9:00" in a workspace's zone, materialized a window at a time."""
