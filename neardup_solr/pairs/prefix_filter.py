"""Prefix filtering for the exact threshold method: query a few rare tokens, not all of them.

The lemma (Chaudhuri et al. 2006; Bayardo, Ma and Srikant 2007 "all pairs"; Xiao et al. 2008 "PPJoin"): put
the tokens of a query set A in any fixed order and call the first k of them its prefix. If a document B holds
none of them, everything B shares with A lies in the other ``|A| - k`` tokens, so ``|A & B| <= |A| - k``. The
exact method already drops every B with ``|A & B| < o`` (``o = ceil(t * |A|)``, see :mod:`.threshold`). With
``k = |A| - o + 1`` the two rules agree: a B without a prefix token has overlap ``<= o - 1`` and would have
been dropped anyway. So asking Solr only for documents holding a prefix token, then applying the same overlap
bound to those, returns exactly the same documents as the full OR-query.

Any order is correct; the order decides the cost. Ordering tokens by document frequency (rarest first) puts
the shortest posting lists in the prefix, which is what makes it fast: at ``t = 0.8`` a 300-shingle text
queries its 61 rarest shingles instead of all 300, and the frequent ones (``of the``, boilerplate) that
dominate an OR-query's cost are almost never among them.

Weighted version (IDF, field weights): the prefix is the shortest run of heaviest tokens whose remaining
weight is below the weighted bound, by the same argument with sums of weights in place of counts.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

# The weighted prefix compares running float sums with the bound. Their rounding is below 1e-12 of the total
# for any realistic token count; asking for the rest to stay 1e-9 under the bound keeps the prefix correct
# whatever the rounding (it can only make the prefix a token longer).
_WEIGHTED_MARGIN = 1e-9


def prefix_size(num_tokens: int, min_overlap: int) -> int:
    """How many tokens (of ``num_tokens`` distinct ones) a set needs in its prefix so that every set sharing
    at least ``min_overlap`` of them shares one of the prefix: ``num_tokens - min_overlap + 1``, within
    ``[0, num_tokens]``. ``min_overlap <= 0`` means any document qualifies, so the whole set is the prefix."""
    if num_tokens < 0:
        raise ValueError("num_tokens must be >= 0")
    if min_overlap <= 0:
        return num_tokens
    return max(0, min(num_tokens, num_tokens - min_overlap + 1))


def rarest_first(tokens: Sequence[str], document_frequency: Mapping[str, int]) -> list[str]:
    """Distinct tokens, rarest first (ties by the token, so the order never depends on input order or hash
    seed); a token missing from ``document_frequency`` counts as unseen (frequency 0)."""
    return sorted(dict.fromkeys(tokens), key=lambda t: (document_frequency.get(t, 0), t))


def count_prefix(tokens: Sequence[str], document_frequency: Mapping[str, int], min_overlap: int) -> list[str]:
    """The prefix of an unweighted token set for an overlap bound: its ``prefix_size`` rarest tokens."""
    ordered = rarest_first(tokens, document_frequency)
    return ordered[: prefix_size(len(ordered), min_overlap)]


def weighted_prefix(
    weights: Mapping[str, float], document_frequency: Mapping[str, int], min_overlap: float,
) -> list[str]:
    """The prefix of a weighted token set: the heaviest tokens (ties rarest first, then by token) up to the
    first point where the weight left over is below ``min_overlap``; a document holding none of them has a
    weighted overlap below the bound. Tokens of weight 0 never enter it (they add nothing to an overlap)."""
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError("weights must be finite and >= 0")
    ordered = sorted((t for t, w in weights.items() if w > 0),
                     key=lambda t: (-weights[t], document_frequency.get(t, 0), t))
    total = math.fsum(weights[t] for t in ordered)
    if min_overlap <= 0:
        return ordered
    limit = min_overlap - _WEIGHTED_MARGIN * total
    remaining = total
    for taken, token in enumerate(ordered, start=1):
        remaining -= weights[token]
        if remaining < limit:
            return ordered[:taken]
    return ordered
