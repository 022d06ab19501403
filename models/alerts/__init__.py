"""Alerts: rules evaluated by the ``alerts`` clock job, firing and resolving with a cooldown, delivered in-app,
through a workspace's channels by the engine, and directly when the engine itself is what is stuck."""
