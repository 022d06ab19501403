"""Posts: what marketers write and approve, and the reconciler that keeps their rows in step."""
