"""Pictures for the web page as inline SVG, drawn on the server: no JavaScript and no plotting library, so the
page stays one request and the browser test can read the drawing's structure (elements and their data
attributes) rather than its pixels."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from neardup_solr.pairs.lsh import LSHParams

__all__ = ["Curve", "Histogram", "histogram_svg", "s_curve_svg", "similarity_histogram"]

WIDTH, HEIGHT = 560, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 16, 16, 40


@dataclass(frozen=True)
class Curve:
    """One S-curve to draw: its bands and rows, what it is, and its CSS class (its colour and dash)."""

    params: LSHParams
    label: str
    css_class: str = "curve"


def _x(s: float) -> float:
    return _LEFT + s * (WIDTH - _LEFT - _RIGHT)


def _y(p: float) -> float:
    return HEIGHT - _BOTTOM - p * (HEIGHT - _TOP - _BOTTOM)


def s_curve_svg(curves: list[Curve], threshold: float | None = None, steps: int = 100) -> str:
    """The probability that two documents of Jaccard ``s`` share a band, ``1 - (1 - s**rows)**bands``, of each
    curve over ``s`` in [0, 1], with ``threshold`` marked by a vertical line. Each curve's ``<polyline>`` carries
    ``data-bands``, ``data-rows`` and ``data-points``; the threshold line ``data-threshold``."""
    parts = [f'<svg id="s-curve" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" aria-label="probability of becoming a candidate against Jaccard similarity">']
    for tick in range(0, 11, 2):
        v = tick / 10
        parts.append(f'<line class="grid" x1="{_x(0):.1f}" y1="{_y(v):.1f}" x2="{_x(1):.1f}" y2="{_y(v):.1f}"/>')
        parts.append(f'<text class="tick" x="{_LEFT - 6}" y="{_y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        parts.append(f'<text class="tick" x="{_x(v):.1f}" y="{HEIGHT - _BOTTOM + 16}" text-anchor="middle">'
                     f'{v:.1f}</text>')
    parts.append(f'<text class="axis" x="{_x(0.5):.1f}" y="{HEIGHT - 6}" text-anchor="middle">Jaccard similarity'
                 f'</text>')
    parts.append(f'<text class="axis" x="12" y="{_y(0.5):.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {_y(0.5):.1f})">P(candidate)</text>')
    for curve in curves:
        p = curve.params
        points = " ".join(f"{_x(i / steps):.1f},{_y(float(p.probability(i / steps))):.1f}" for i in range(steps + 1))
        parts.append(f'<polyline class="{escape(curve.css_class)}" data-bands="{p.bands}" data-rows="{p.rows}" '
                     f'data-points="{steps + 1}" points="{points}"><title>{escape(curve.label)}</title></polyline>')
    if threshold is not None:
        parts.append(f'<line class="threshold" data-threshold="{threshold:g}" x1="{_x(threshold):.1f}" '
                     f'y1="{_y(0):.1f}" x2="{_x(threshold):.1f}" y2="{_y(1):.1f}"/>')
        parts.append(f'<text class="threshold-label" x="{_x(threshold) + 4:.1f}" y="{_TOP + 12}">'
                     f'threshold {threshold:g}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Histogram:
    """Counts of similarities in equal bins from ``low`` to 1; the last bin holds 1.0 itself."""

    low: float
    width: float
    counts: tuple[int, ...]

    def edges(self, index: int) -> tuple[float, float]:
        return self.low + index * self.width, min(1.0, self.low + (index + 1) * self.width)


def similarity_histogram(similarities: list[float], threshold: float, width: float = 0.025) -> Histogram:
    """Bins of ``width`` from the threshold (rounded down to a multiple of the width) to 1. A report holds only
    pairs at or above its threshold, so nothing falls below the first bin; a value that does is counted in it."""
    if not 0 < width <= 1:
        raise ValueError(f"width must be in (0, 1], got {width}")
    low = max(0.0, min(1.0 - width, int(round(threshold / width, 9)) * width))
    bins = max(1, int(round((1.0 - low) / width + 0.4999)))
    counts = [0] * bins
    for value in similarities:
        index = int((value - low) / width + 1e-9)
        counts[min(bins - 1, max(0, index))] += 1
    return Histogram(low, width, tuple(counts))


def histogram_svg(histogram: Histogram, threshold: float | None = None) -> str:
    """Bars of the histogram; each ``<rect class="bin">`` carries ``data-low``, ``data-high`` and ``data-count``,
    and the threshold line ``data-threshold``. The x axis spans the bins, the y axis the largest count."""
    bins = len(histogram.counts)
    top = max(histogram.counts) or 1
    span = 1.0 - histogram.low

    def x(s: float) -> float:
        return _LEFT + (s - histogram.low) / span * (WIDTH - _LEFT - _RIGHT)

    def y(count: float) -> float:
        return HEIGHT - _BOTTOM - count / top * (HEIGHT - _TOP - _BOTTOM)

    parts = [f'<svg id="histogram" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" aria-label="number of pairs by similarity">']
    for fraction in (0.25, 0.5, 0.75, 1.0):
        value = top * fraction
        parts.append(f'<line class="grid" x1="{x(histogram.low):.1f}" y1="{y(value):.1f}" x2="{x(1):.1f}" '
                     f'y2="{y(value):.1f}"/>')
        parts.append(f'<text class="tick" x="{_LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">'
                     f'{value:,.0f}</text>')
    step = max(1, bins // 8)
    for index in range(0, bins + 1, step):
        edge = min(1.0, histogram.low + index * histogram.width)
        parts.append(f'<text class="tick" x="{x(edge):.1f}" y="{HEIGHT - _BOTTOM + 16}" text-anchor="middle">'
                     f'{edge:.2f}</text>')
    for index, count in enumerate(histogram.counts):
        low, high = histogram.edges(index)
        parts.append(f'<rect class="bin" data-low="{low:.4f}" data-high="{high:.4f}" data-count="{count}" '
                     f'x="{x(low) + 1:.1f}" y="{y(count):.1f}" width="{max(0.5, x(high) - x(low) - 2):.1f}" '
                     f'height="{y(0) - y(count):.1f}"><title>{low:.3f} to {high:.3f}: {count:,} pairs</title></rect>')
    parts.append(f'<text class="axis" x="{x(histogram.low + span / 2):.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
                 f'similarity</text>')
    parts.append(f'<text class="axis" x="12" y="{y(top / 2):.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {y(top / 2):.1f})">pairs</text>')
    if threshold is not None and histogram.low <= threshold <= 1:
        parts.append(f'<line class="threshold" data-threshold="{threshold:g}" x1="{x(threshold):.1f}" '
                     f'y1="{y(0):.1f}" x2="{x(threshold):.1f}" y2="{y(top):.1f}"/>')
    parts.append("</svg>")
    return "".join(parts)
