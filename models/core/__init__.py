"""Plumbing every floor uses and no business rule: base, types, database, errors, policy, secrets, runtime, moves."""
