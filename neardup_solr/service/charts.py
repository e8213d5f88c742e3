"""Pictures for the web page as inline SVG, drawn on the server: no JavaScript and no plotting library, so the
page stays one request and the browser test can read the drawing's structure (elements and their data
attributes) rather than its pixels."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from neardup_solr.pairs.lsh import LSHParams

__all__ = ["Curve", "s_curve_svg"]

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
