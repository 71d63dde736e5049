"""The throughput chart of a campaign report, drawn as SVG by refc itself.

A campaign summary (``refc-fuzz-summary/1``) holds totals and, per finding,
the seconds it took to find it. If it also holds a ``progress`` series (a list
of ``{"seconds", "cases", "schedules"}`` points, cumulative), the chart draws
cases and schedules per second over time from it; otherwise it draws what
exists: the campaign's average rates as flat lines over its duration, and the
moment each distinct failure was found.
"""

from __future__ import annotations

from typing import Any, Sequence

from refcompiler.pictures.svg import document, element, text

__all__ = ["throughput_svg", "progress_points", "finite_number"]

_W, _H = 720.0, 260.0
_LEFT, _TOP, _RIGHT, _BOTTOM = 60.0, 30.0, 60.0, 40.0
_CASES, _SCHEDULES, _FOUND = "#1565c0", "#2e7d32", "#c62828"


def finite_number(v: Any) -> float | None:
    """A summary's value as a finite float, or ``None``: a file's number may be
    a boolean, NaN, infinite, or an integer too large for a float."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if f == f and abs(f) != float("inf") else None


def progress_points(summary: dict[str, Any]) -> list[tuple[float, float, float]]:
    """``(seconds, cases, schedules)`` of a summary's progress series, sorted;
    points with a missing or non-numeric field are left out."""
    series = summary.get("progress")
    if not isinstance(series, list):
        return []
    points = []
    for p in series:
        if isinstance(p, dict):
            values = [finite_number(p.get(k)) for k in ("seconds", "cases", "schedules")]
            if all(v is not None for v in values):
                points.append(tuple(values))
    return sorted(points)  # type: ignore[arg-type]


def _rates(points: Sequence[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Per-interval rates between consecutive cumulative points: (t, cases/s, schedules/s)."""
    out = []
    for (t0, c0, s0), (t1, c1, s1) in zip(points, points[1:]):
        if t1 > t0:
            out.append((t1, (c1 - c0) / (t1 - t0), (s1 - s0) / (t1 - t0)))
    return out


def _line(points: Sequence[tuple[float, float]], x, y, color: str) -> str:
    path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
    return element("polyline", points=path, fill="none", stroke=color, stroke_width="2")


def throughput_svg(summary: dict[str, Any], found_at: Sequence[float]) -> str:
    """The chart: time on the x axis, cases/s (left axis) and schedules/s
    (scaled to the same height, right axis) on the y axis, a red tick per finding."""
    seconds = finite_number(summary.get("seconds")) or 0.0
    rates = _rates(progress_points(summary))
    if rates:
        series_c = [(t, c) for t, c, _ in rates]
        series_s = [(t, s) for t, _, s in rates]
        note = "from the summary's progress series"
    else:
        cps, sps = finite_number(summary.get("cases_per_second")) or 0.0, finite_number(summary.get("schedules_per_second")) or 0.0
        series_c, series_s = [(0.0, cps), (seconds, cps)], [(0.0, sps), (seconds, sps)]
        note = "averages over the campaign (the summary has no progress series)"
    span = max([seconds, *(t for t, _ in series_c), *found_at, 1e-9])
    top_c = max([v for _, v in series_c] + [1e-9]) * 1.15
    top_s = max([v for _, v in series_s] + [1e-9]) * 1.15
    pw, ph = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(t: float) -> float:
        return _LEFT + t / span * pw

    def yc(v: float) -> float:
        return _TOP + ph - v / top_c * ph

    def ys(v: float) -> float:
        return _TOP + ph - v / top_s * ph

    body = [
        text(_LEFT, 18, f"throughput: {note}", font_size="12", font_weight="bold"),
        element("line", x1=_LEFT, y1=_TOP + ph, x2=_LEFT + pw, y2=_TOP + ph, stroke="#212121"),
        element("line", x1=_LEFT, y1=_TOP, x2=_LEFT, y2=_TOP + ph, stroke="#212121"),
        _line(series_c, x, yc, _CASES),
        _line(series_s, x, ys, _SCHEDULES),
        text(_LEFT - 6, yc(top_c / 1.15) + 4, f"{top_c / 1.15:.1f}", text_anchor="end", fill=_CASES),
        text(_LEFT + pw + 6, ys(top_s / 1.15) + 4, f"{top_s / 1.15:.1f}", fill=_SCHEDULES),
        text(_LEFT - 6, _TOP + ph + 4, "0", text_anchor="end"),
        text(_LEFT + pw, _TOP + ph + 16, f"{span:.1f} s", text_anchor="end"),
        text(_LEFT + pw / 2, _TOP + ph + 30, "seconds since the campaign started", text_anchor="middle"),
        text(_LEFT + 8, _TOP + 12, "cases/s", fill=_CASES),
        text(_LEFT + 70, _TOP + 12, "schedules/s (right scale)", fill=_SCHEDULES),
        text(_LEFT + 240, _TOP + 12, "| a distinct failure found", fill=_FOUND),
    ]
    for t in found_at:
        body.append(element("line", element("title", f"found after {t:.2f} s"), x1=x(t), y1=_TOP, x2=x(t), y2=_TOP + ph, stroke=_FOUND, stroke_dasharray="3 3", class_="found"))
    return document(_W, _H, body, title="campaign throughput")
