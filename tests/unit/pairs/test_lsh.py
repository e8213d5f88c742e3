"""LSH banding: probabilities, parameter choice, band keys and the S-curve plot (no Solr needed)."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_solr.pairs.lsh import (
    LSHParams,
    band_keys,
    band_tokens,
    collision_probability,
    curve_table,
    optimal_params,
    plot_s_curve,
)
from neardup_solr.text import MinHash


def test_collision_probability_formula():
    assert collision_probability(0.8, 20, 5) == 1 - (1 - 0.8**5) ** 20
    s = np.array([0.0, 0.5, 0.8, 1.0])
    np.testing.assert_allclose(collision_probability(s, 20, 5), 1 - (1 - s**5) ** 20)
    assert collision_probability(0.0, 20, 5) == 0.0
    assert collision_probability(1.0, 20, 5) == 1.0


def test_params_threshold_and_validation():
    params = LSHParams(bands=20, rows=5)
    assert params.num_hashes == 100
    assert params.threshold == pytest.approx((1 / 20) ** (1 / 5))
    with pytest.raises(ValueError, match="bands"):
        LSHParams(bands=0, rows=5)
    with pytest.raises(ValueError, match="rows"):
        LSHParams(bands=2, rows=1.5)  # type: ignore[arg-type]


def test_optimal_params_for_0_8_and_128():
    params = optimal_params(0.8, 128)
    assert params.bands * params.rows <= 128
    # The equal-weight optimum is b=9, r=13 (datasketch finds the same). Its curve:
    assert params == LSHParams(bands=9, rows=13)
    assert collision_probability(0.5, params.bands, params.rows) < 0.01
    assert collision_probability(0.6, params.bands, params.rows) < 0.1
    assert collision_probability(0.9, params.bands, params.rows) > 0.9
    assert collision_probability(0.95, params.bands, params.rows) > 0.99
    # The steep part sits near the threshold.
    assert 0.75 < params.threshold < 0.9


def test_weights_move_the_curve():
    fewer_misses = optimal_params(0.8, 128, false_positive_weight=0.1, false_negative_weight=0.9)
    fewer_candidates = optimal_params(0.8, 128, false_positive_weight=0.9, false_negative_weight=0.1)
    assert collision_probability(0.8, fewer_misses.bands, fewer_misses.rows) > collision_probability(
        0.8, fewer_candidates.bands, fewer_candidates.rows
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(threshold=1.5, num_hashes=128), "threshold"),
        (dict(threshold=-0.1, num_hashes=128), "threshold"),
        (dict(threshold=float("nan"), num_hashes=128), "threshold"),
        (dict(threshold=0.8, num_hashes=0), "num_hashes"),
        (dict(threshold=0.8, num_hashes=12.5), "num_hashes"),
        (dict(threshold=0.8, num_hashes=128, false_positive_weight=-1), "weights"),
        (dict(threshold=0.8, num_hashes=128, false_positive_weight=0, false_negative_weight=0), "weights"),
    ],
)
def test_optimal_params_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        optimal_params(**kwargs)


@settings(max_examples=60, deadline=None)
@given(threshold=st.floats(0.05, 0.95, exclude_min=True, exclude_max=True), num_hashes=st.integers(1, 512))
def test_optimal_params_fit_the_signature(threshold, num_hashes):
    params = optimal_params(threshold, num_hashes)
    assert params.bands >= 1 and params.rows >= 1
    assert params.bands * params.rows <= num_hashes


def test_curve_table():
    params = LSHParams(bands=20, rows=5)
    table = curve_table(params)
    assert [s for s, _ in table] == [0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0]
    probabilities = [p for _, p in table]
    assert probabilities == sorted(probabilities)
    assert table[-1] == (1.0, 1.0)
    assert curve_table(params, [0.8]) == [(0.8, 1 - (1 - 0.8**5) ** 20)]


# -- band keys ---------------------------------------------------------------------------------------------------


def _signatures(n: int = 5, num_hashes: int = 128, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, size=(n, num_hashes), dtype=np.uint32)


def test_band_keys_shape_and_determinism():
    params = LSHParams(bands=16, rows=8)
    sigs = _signatures()
    keys = band_keys(sigs, params)
    assert keys.shape == (5, 16) and keys.dtype == np.uint64
    assert band_keys(sigs.copy(), params).tolist() == keys.tolist()
    assert band_keys(sigs[2], params).tolist() == [keys[2].tolist()]
    # distinct signatures -> distinct keys
    assert len(set(keys.ravel().tolist())) == keys.size


def test_identical_signatures_identical_keys():
    params = optimal_params(0.8, 128)
    minhash = MinHash()
    sigs = minhash.signatures(["The same text, twice.", "the SAME text twice", "another text entirely"])
    keys = band_keys(sigs, params)
    assert keys[0].tolist() == keys[1].tolist()
    assert not set(keys[0].tolist()) & set(keys[2].tolist())


def test_one_band_changed_changes_only_that_key():
    params = LSHParams(bands=16, rows=8)
    a = _signatures(1)[0]
    b = a.copy()
    b[3 * 8 + 5] ^= 1  # a single value in band 3
    ka, kb = band_keys(np.stack([a, b]), params)
    differs = [i for i in range(16) if ka[i] != kb[i]]
    assert differs == [3]


def test_band_keys_are_position_sensitive():
    params = LSHParams(bands=4, rows=2)
    same_values = np.tile(np.array([7, 9], dtype=np.uint32), 4)[None, :]
    keys = band_keys(same_values, params)[0]
    assert len(set(keys.tolist())) == 4  # same values in different bands -> different keys
    swapped = np.tile(np.array([9, 7], dtype=np.uint32), 4)[None, :]
    assert band_keys(swapped, params)[0, 0] != keys[0]  # order within a band matters


def test_band_keys_use_only_the_first_b_times_r_values():
    params = LSHParams(bands=10, rows=12)  # 120 of 128
    sigs = _signatures(2)
    changed = sigs.copy()
    changed[:, 120:] += 1
    assert band_keys(sigs, params).tolist() == band_keys(changed, params).tolist()
    with pytest.raises(ValueError, match="at least 200"):
        band_keys(sigs, LSHParams(bands=20, rows=10))


def test_band_tokens():
    params = LSHParams(bands=3, rows=4)
    keys = band_keys(_signatures(1, 12), params)[0]
    tokens = band_tokens(keys)
    assert len(tokens) == 3
    for i, token in enumerate(tokens):
        band, hex_key = token.split("_")
        assert band == str(i)
        assert len(hex_key) == 16 and int(hex_key, 16) == int(keys[i])
    with pytest.raises(ValueError, match="one document"):
        band_tokens(np.zeros((2, 3), dtype=np.uint64))


# -- plot --------------------------------------------------------------------------------------------------------


def test_plot_s_curve_writes_png(tmp_path):
    path = plot_s_curve(optimal_params(0.8, 128), tmp_path / "curve.png", threshold=0.8)
    data = path.read_bytes()
    assert len(data) > 1000
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_s_curve(LSHParams(20, 5), tmp_path / "x.png")
