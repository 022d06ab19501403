"""The clock: its runs, consumer heartbeats, the tick, and the dispatch of due actions."""
