"""Accounts: workspaces, people, their roles, API tokens."""
