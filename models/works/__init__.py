"""Works: things a workspace regenerates on a cadence, their schedules, runs, plugins, plans and usage."""
