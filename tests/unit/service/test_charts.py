"""The web page's pictures, as pure functions: the similarity histogram's bins and its SVG's structure."""

from __future__ import annotations

import re

import pytest

from neardup_solr.service.charts import histogram_svg, similarity_histogram


def test_bins_start_at_the_threshold_and_the_last_one_holds_exact_duplicates():
    histogram = similarity_histogram([0.8, 0.81, 0.849, 0.85, 0.999, 1.0, 1.0], 0.8, 0.05)
    assert histogram.low == pytest.approx(0.8) and len(histogram.counts) == 4
    assert histogram.counts == (3, 1, 0, 3)
    assert histogram.edges(3) == pytest.approx((0.95, 1.0))


def test_a_threshold_between_bin_edges_starts_the_first_bin_below_it():
    histogram = similarity_histogram([0.37, 0.4, 1.0], 0.37, 0.05)
    assert histogram.low == pytest.approx(0.35) and sum(histogram.counts) == 3
    assert histogram.counts[0] == 1 and histogram.counts[1] == 1 and histogram.counts[-1] == 1


def test_no_pairs_gives_empty_bins_and_a_bad_width_is_refused():
    assert set(similarity_histogram([], 0.9, 0.025).counts) == {0}
    with pytest.raises(ValueError, match="width"):
        similarity_histogram([0.5], 0.5, 0)


def test_the_svg_has_one_bar_per_bin_with_its_count_and_height_in_proportion():
    histogram = similarity_histogram([0.5] * 4 + [0.75] * 2 + [1.0], 0.5, 0.25)
    svg = histogram_svg(histogram, 0.5)
    bars = re.findall(r'<rect class="bin" data-low="([\d.]+)" data-high="([\d.]+)" data-count="(\d+)" '
                      r'x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"', svg)
    assert [(float(lo), float(hi), int(n)) for lo, hi, n, _ in bars] == [(0.5, 0.75, 4), (0.75, 1.0, 3)]
    heights = [float(h) for *_, h in bars]
    assert heights[1] == pytest.approx(heights[0] * 3 / 4, abs=0.2)
    assert 'data-threshold="0.5"' in svg and svg.startswith('<svg id="histogram"') and svg.endswith("</svg>")
