"""Charts drawn on the server as SVG: bars of counts and lines of durations over time.

The builders return plain numbers and text; the templates write the ``<svg>`` (autoescaped
labels, classes instead of inline styles, no script), so the charts need no JavaScript, no
CDN and nothing the admin's strict Content-Security-Policy refuses. Colours are in
``django_bullq/css/bullq-metrics.css``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .display import duration_text, utc_text

#: Chart size in SVG user units (the CSS scales it to the page's width).
WIDTH, HEIGHT = 720, 160
#: Space left of and under the plot for the axis labels.
LEFT, BOTTOM = 90, 18


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: position and size, its CSS class, and its hover text."""

    x: float
    y: float
    w: float
    h: float
    kind: str
    title: str


@dataclass(frozen=True, slots=True)
class Line:
    """One polyline: ``points`` (``"x,y x,y ..."``), its CSS class and legend text."""

    kind: str
    label: str
    points: str


@dataclass(slots=True)
class Chart:
    """What a template draws: the plot's box, its bars or lines, and the axis labels."""

    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    plot_bottom: int = HEIGHT - BOTTOM
    bars: list[Bar] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    #: the value at the top of the y axis, as text (``"120 / min"``, ``"2.5 s"``)
    top_label: str = ""
    #: the first and last step's start (UTC text) under the x axis
    first_label: str = ""
    last_label: str = ""
    #: True when any value is above zero (else the template says there is nothing yet)
    any: bool = False


def _frame(starts: Sequence[int], top_label: str) -> Chart:
    return Chart(
        top_label=top_label,
        first_label=utc_text(starts[0])[:16] if starts else "",
        last_label=utc_text(starts[-1])[:16] if starts else "",
    )


def bar_chart(starts: Sequence[int], series: dict[str, Sequence[int]], unit: str) -> Chart:
    """Side-by-side bars per step, one per series (e.g. completed and failed).

    Args:
        starts: each step's start, epoch ms (oldest first).
        series: CSS class -> one count per step.
        unit: what a count is per (``"min"``), for the y label.
    """
    top = max([1, *(v for values in series.values() for v in values)])
    chart = _frame(starts, f"{top} / {unit}")
    plot_w, plot_h = WIDTH - LEFT, chart.plot_bottom
    slot = plot_w / max(1, len(starts))
    width = slot / max(1, len(series))
    for n, (kind, values) in enumerate(series.items()):
        for i, value in enumerate(values):
            h = round(plot_h * value / top, 1)
            chart.bars.append(
                Bar(
                    x=round(LEFT + i * slot + n * width, 1),
                    y=round(plot_h - h, 1),
                    w=round(max(0.5, width - 0.5), 1),
                    h=h,
                    kind=kind,
                    title=f"{utc_text(starts[i])[:16]}: {value} {kind}",
                )
            )
            chart.any = chart.any or value > 0
    return chart


def line_chart(starts: Sequence[int], series: dict[str, Sequence[float | None]]) -> Chart:
    """One polyline per series of durations (ms) per step; a step without a value breaks
    nothing: the line joins the steps that have one.

    Args:
        starts: each step's start, epoch ms (oldest first).
        series: legend label (``"p95"``) -> one duration in ms (or None) per step.
    """
    top = max([1.0, *(v for values in series.values() for v in values if v is not None)])
    chart = _frame(starts, duration_text(top))
    plot_w, plot_h = WIDTH - LEFT, chart.plot_bottom
    slot = plot_w / max(1, len(starts))
    for label, values in series.items():
        points = [
            f"{round(LEFT + (i + 0.5) * slot, 1)},{round(plot_h - plot_h * v / top, 1)}"
            for i, v in enumerate(values)
            if v is not None
        ]
        if points:
            chart.any = True
            if len(points) == 1:  # one step: a short flat line, so it shows
                x, y = points[0].split(",")
                points = [f"{float(x) - 2},{y}", f"{float(x) + 2},{y}"]
            chart.lines.append(Line(label, label, " ".join(points)))
    return chart


def sparkline(values: Sequence[int], width: int = 120, height: int = 24) -> str:
    """The ``points`` of a small polyline of ``values`` (oldest first), "" when all are 0."""
    if not any(values):
        return ""
    top = max(values)
    step = width / max(1, len(values) - 1)
    return " ".join(
        f"{round(i * step, 1)},{round(height - 1 - (height - 2) * v / top, 1)}"
        for i, v in enumerate(values)
    )
