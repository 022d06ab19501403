"""Channels: a workspace's provider connections, the providers that speak to them, and the log outbox."""
