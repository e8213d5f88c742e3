"""Small NumPy helpers shared by the all-pairs and collection code."""

from __future__ import annotations

import numpy as np


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting: NumPy 2.3's hash-based unique measured 2.7 µs an element on shingle
    keys (1.9 s for 200 long documents, against 0.04 s to sort them)."""
    values = np.sort(values)
    if values.size < 2:
        return values
    return values[np.r_[True, values[1:] != values[:-1]]]
