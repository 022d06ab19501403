"""Charts for the health page as server-rendered SVG: the geometry here, the drawing in
``health/_chart.html``. No JavaScript: a bar's numbers are in its ``<title>`` (the browser's
own tooltip) and in the table beside the chart, which is what a screen reader reads."""

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 560, 150
LEFT, RIGHT, TOP, BOTTOM = 54, 8, 10, 22


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    css: str
    tip: str = ""


@dataclass(frozen=True)
class Line:
    d: str  # an SVG path; a gap in the data starts a new segment
    css: str
    dots: list[tuple[float, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True)
class Picture:
    rects: list[Rect]
    lines: list[Line]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    legend: list[tuple[str, str]]  # (css, label)
    empty: bool
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right: int = WIDTH - RIGHT
    bottom: int = HEIGHT - BOTTOM


def nice_ceiling(value: float) -> float:
    """The smallest 2, 4 or 10 × 10^k (at least 2) at or above ``value``: its half is a round count."""
    if value <= 2:
        return 2.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 4, 10):
        if value <= step * power * (1 + 1e-9) and step * power >= 2:
            return step * power
    return 10 * power


# Durations get tops that halve into round figures in their own unit.
_SECONDS_CEILINGS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400,
                     28800, 43200, 86400)


def seconds_ceiling(value: float) -> float:
    return next((top for top in _SECONDS_CEILINGS if value <= top * (1 + 1e-9)), math.ceil(value / 86400) * 86400)


def seconds_label(value: float) -> str:
    if value < 60:
        return f"{value:.2g} s" if value < 1 else f"{value:g} s"
    if value < 3600:
        return f"{value / 60:g} min"
    return f"{value / 3600:g} h"


def count_label(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"


def _frame(slots: int, top_value: float, label, x_labels: list[tuple[int, str]]):
    width = (WIDTH - RIGHT - LEFT) / max(slots, 1)
    height = HEIGHT - BOTTOM - TOP
    ceiling = seconds_ceiling(top_value) if label is seconds_label else nice_ceiling(top_value)
    y = lambda value: HEIGHT - BOTTOM - height * (value / ceiling)  # noqa: E731
    y_ticks = [Tick(y(ceiling * part / 2), label(ceiling * part / 2)) for part in (0, 1, 2)]
    x_ticks = [Tick(LEFT + width * (slot + 0.5), text) for slot, text in x_labels]
    return width, y, y_ticks, x_ticks


def stacked_bars(series: list[tuple[str, str, list[float | None]]], *, tips: list[str],
                 x_labels: list[tuple[int, str]], label=count_label,
                 marks: list[bool] | None = None, mark_css: str = "mark-bad") -> Picture:
    """Bars per slot, the series stacked bottom up; ``marks`` flags slots with a band at the top."""
    slots = len(tips)
    totals = [sum(values[n] or 0 for _, _, values in series) for n in range(slots)]
    width, y, y_ticks, x_ticks = _frame(slots, max(totals, default=0), label, x_labels)
    rects = []
    for n in range(slots):
        base = 0.0
        for _, css, values in series:
            value = values[n] or 0
            if value > 0:
                rects.append(Rect(LEFT + width * n + width * 0.1, y(base + value), width * 0.8,
                                  y(base) - y(base + value), css, tips[n]))
            base += value
        if marks and marks[n]:
            rects.append(Rect(LEFT + width * n + width * 0.1, TOP, width * 0.8, 4, mark_css, tips[n]))
    return Picture(rects=rects, lines=[], y_ticks=y_ticks, x_ticks=x_ticks,
                   legend=[(css, name) for name, css, _ in series], empty=not any(totals))


def lines(series: list[tuple[str, str, list[float | None]]], *, tips: list[str],
          x_labels: list[tuple[int, str]], label=seconds_label) -> Picture:
    """One line per series across the slots; a slot without a value breaks the line."""
    slots = len(tips)
    top_value = max((v for _, _, values in series for v in values if v is not None), default=0)
    width, y, y_ticks, x_ticks = _frame(slots, top_value, label, x_labels)
    drawn = []
    for _, css, values in series:
        path, dots, pen_down = [], [], False
        for n, value in enumerate(values):
            if value is None:
                pen_down = False
                continue
            x, at = LEFT + width * (n + 0.5), y(value)
            path.append(f"{'L' if pen_down else 'M'}{x:.1f} {at:.1f}")
            dots.append((round(x, 1), round(at, 1)))
            pen_down = True
        drawn.append(Line(" ".join(path), css, dots))
    # Invisible full-height bands carry each slot's numbers as a tooltip.
    bands = [Rect(LEFT + width * n, TOP, width, HEIGHT - BOTTOM - TOP, "hover-band", tips[n]) for n in range(slots)]
    return Picture(rects=bands, lines=drawn, y_ticks=y_ticks, x_ticks=x_ticks,
                   legend=[(css, name) for name, css, _ in series],
                   empty=not any(v is not None for _, _, values in series for v in values))
