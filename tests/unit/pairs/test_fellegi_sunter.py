"""Field comparisons and the Fellegi-Sunter model, pure: levels of known value pairs; EM on synthetic comparison
levels drawn from planted m, u and lambda recovers them; probabilities rise with agreement; the model's JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from neardup_solr.errors import InputFormatError, InvalidParameterError
from neardup_solr.pairs.comparisons import (
    MISSING,
    FieldComparison,
    comparison_vectors,
    parse_date,
    parse_field_kinds,
    prepare_records,
)
from neardup_solr.pairs.fellegi_sunter import (
    MODEL_VERSION,
    FellegiSunterModel,
    estimate_u,
    expectation_maximisation,
    train,
)


def level(kind: str, a: str, b: str) -> int:
    c = FieldComparison("f", kind)
    return c.level(c.prepare(a), c.prepare(b))


def test_name_levels_from_exact_to_else():
    assert level("name", "Marlowen Smith", "marlowen  SMITH") == 5
    assert level("name", "Marlowen Smith", "Smith Marlowen") == 4
    assert level("name", "Marlowen Smith", "Marlowen Smiht") == 3
    assert level("name", "Marlowen Smith", "M. Smith") == 1
    assert level("name", "Marlowen Smith", "Jorab Keller") == 0


def test_a_pair_has_one_level_whichever_record_comes_first():
    # Two names of two words each, where only one list's words all start words of the other: the online lookup
    # compares a new record with an indexed one, the batch in file order, and both must give the pair one level.
    assert level("name", "Top Tohis", "Tojis T") == level("name", "Tojis T", "Top Tohis") == 1
    assert level("name", "Smi Snoock", "S Nsoock") == level("name", "S Nsoock", "Smi Snoock") == 1
    pairs = [("Marlowen Smith", "Smith M."), ("Ann Lee", "Lee Annie"), ("1984-03-07", "07.03.1984"),
             ("12 High St", "12 High Street"), ("555-123-4567", "555-123-4576"), ("120", "131")]
    for kind in ("name", "text", "date", "number", "code", "exact"):
        for a, b in pairs:
            assert level(kind, a, b) == level(kind, b, a), (kind, a, b)


def test_dates_written_differently_are_the_same_day():
    assert parse_date("march 7, 1984") == parse_date("1984-03-07") == parse_date("03/07/1984")
    assert parse_date("07.03.1984") == parse_date("7 mar 84") == parse_date("19840307")
    assert parse_date("31.02.1984") is None and parse_date("soon") is None
    assert level("date", "1984-03-07", "March 7, 1984") == 3
    assert level("date", "1984-03-07", "1984-03-08") == 2  # one digit
    assert level("date", "1984-03-07", "1984-07-03") == 2  # day and month swapped
    assert level("date", "1984-03-07", "1984-11-20") == 1
    assert level("date", "1984-03-07", "1954-11-20") == 0


def test_codes_numbers_and_missing_values():
    assert level("code", "555-123-4567", "5551234567") == 3
    assert level("code", "555-123-4567", "555-123-4576") == 2  # two digits swapped: one edit
    assert level("code", "555-123-4567", "555-129-4576") == 1
    assert level("code", "555-123-4567", "999-888-7777") == 0
    assert level("number", "120", "1200") == 2 and level("number", "120", "131") == 1 and level("number", "120", "310") == 0
    assert level("text", "", "12 High St") == MISSING and level("exact", "a", None) == MISSING


def test_fields_from_spec():
    fields = parse_field_kinds("name:name, born:date,address")
    assert [(c.field, c.kind) for c in fields] == [("name", "name"), ("born", "date"), ("address", "text")]
    with pytest.raises(InvalidParameterError, match="each kind one of name, text.*got 'name:surname'; 'name:surname' is not"):
        parse_field_kinds("name:surname")
    with pytest.raises(InvalidParameterError, match="each column named once"):
        parse_field_kinds("name,name:name")


def test_comparison_vectors_row_per_pair():
    comps = parse_field_kinds("name:name,phone:code")
    left = prepare_records(comps, [{"name": "Ann Lee", "phone": "555-1234"}, {"name": "Bo Chan"}])
    right = prepare_records(comps, [{"name": "Lee Ann", "phone": "555-1243"}])
    assert comparison_vectors(comps, left, right, [(0, 0), (1, 0)]).tolist() == [[4, 2], [0, MISSING]]


PLANTED_KINDS = ("text", "code", "exact", "date")


def planted(seed: int):
    """m and u for four fields (m heavy on the high levels, u on the low ones) and draws of levels from them."""
    rng = np.random.default_rng(seed)
    comps = [FieldComparison(f"f{i}", kind) for i, kind in enumerate(PLANTED_KINDS)]
    m, u = [], []
    for c in comps:
        n = len(c.levels)
        m.append(np.linspace(0.2, 3.0, n) ** 3 / (np.linspace(0.2, 3.0, n) ** 3).sum())
        u.append(np.linspace(3.0, 0.2, n) ** 3 / (np.linspace(3.0, 0.2, n) ** 3).sum())

    def draw(probabilities: list[np.ndarray], rows: int, missing: float = 0.05) -> np.ndarray:
        out = np.stack([rng.choice(len(p), size=rows, p=p) for p in probabilities], axis=1)
        out[rng.random(out.shape) < missing] = MISSING
        return out.astype(np.int8)

    return comps, m, u, draw


@pytest.mark.parametrize("seed,lambda_", [(1, 0.3), (2, 0.6)])
def test_em_recovers_planted_m_and_lambda(seed, lambda_):
    comps, m, u, draw = planted(seed)
    n = 20_000
    matches = int(n * lambda_)
    candidates = np.concatenate([draw(m, matches), draw(u, n - matches)])
    random_pairs = draw(u, 50_000)
    u_hat = estimate_u(random_pairs, comps)
    for got, want in zip(u_hat, u):
        assert np.max(np.abs(np.asarray(got) - want)) < 0.02
    for fix_u in (True, False):
        m_hat, u_em, lambda_hat, result = expectation_maximisation(candidates, comps, u_hat, fix_u=fix_u)
        assert result.converged
        assert lambda_hat == pytest.approx(lambda_, abs=0.03)
        for got, want in zip(m_hat, m):
            assert np.max(np.abs(np.asarray(got) - want)) < 0.04
        for got, want in zip(u_em, u):
            assert np.max(np.abs(np.asarray(got) - want)) < 0.04


def test_em_learns_the_u_of_similar_non_matches():
    """Candidates are chosen for their similarity: their non-matches agree more than random pairs. Started from
    the random pairs' u, EM finds the candidates' own u and lambda; held at the random u it takes them for
    matches."""
    comps, m, u, draw = planted(5)
    candidate_u = [(np.asarray(x) + np.asarray(y)) / 2 for x, y in zip(m, u)]  # between a match and a random pair
    candidates = np.concatenate([draw(m, 6000), draw(candidate_u, 14_000)])
    u_random = estimate_u(draw(u, 50_000), comps)
    _, u_em, lambda_free, _ = expectation_maximisation(candidates, comps, u_random)
    assert lambda_free == pytest.approx(0.3, abs=0.05)
    for got, want in zip(u_em, candidate_u):
        assert np.max(np.abs(np.asarray(got) - want)) < 0.06
    _, _, lambda_fixed, _ = expectation_maximisation(candidates, comps, u_random, fix_u=True)
    assert lambda_fixed > 0.5


def test_probability_rises_with_agreement_and_classifies_planted_pairs():
    comps, m, u, draw = planted(3)
    matches, others = draw(m, 3000, missing=0.0), draw(u, 7000, missing=0.0)
    model = train(comps, np.concatenate([matches, others]), draw(u, 30_000))
    top = np.array([[len(c.levels) - 1 for c in comps]])
    for col, c in enumerate(comps):
        rows = np.repeat(top, len(c.levels), axis=0)
        rows[:, col] = np.arange(len(c.levels))
        p = model.probabilities(rows)
        assert np.all(np.diff(p) > 0), (c.kind, p)
    # A missing value is neutral: between that field's disagreement and its agreement.
    row = top.copy()
    row[0, 0] = MISSING
    assert model.probabilities(row)[0] == pytest.approx(
        1 / (1 + 2.0 ** -(model.match_weights(top)[0] - model.level_weights()[0][-1])))
    truth = np.r_[np.ones(len(matches), bool), np.zeros(len(others), bool)]
    predicted = model.probabilities(np.concatenate([matches, others])) >= 0.5
    assert (predicted == truth).mean() > 0.95


def test_model_json_round_trip_and_version():
    comps, m, u, draw = planted(4)
    model = train(comps, np.concatenate([draw(m, 500), draw(u, 500)]), draw(u, 5000))
    data = json.loads(model.to_json())
    assert data["version"] == MODEL_VERSION and [f["field"] for f in data["fields"]] == ["f0", "f1", "f2", "f3"]
    again = FellegiSunterModel.from_json(model.to_json())
    levels = draw(m, 50)
    assert np.allclose(again.probabilities(levels), model.probabilities(levels))
    data["version"] = MODEL_VERSION + 1
    with pytest.raises(InputFormatError, match="retrain"):
        FellegiSunterModel.from_dict(data)
    data["version"] = MODEL_VERSION
    data["fields"][0]["m"] = data["fields"][0]["m"][:-1]
    with pytest.raises(InputFormatError, match="levels"):
        FellegiSunterModel.from_dict(data)


def test_dates_are_searched_in_one_form():
    born, name = FieldComparison("born", "date"), FieldComparison("name", "name")
    assert born.candidate_text(born.prepare("25 Sep 35")) == born.candidate_text(born.prepare("1935-09-25")) \
        == "1935-09-25"
    assert born.candidate_text(born.prepare("someday")) == "someday"
    assert name.candidate_text(name.prepare("Ann  LEE")) == "ann lee"
