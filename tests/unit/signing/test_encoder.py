"""The encoder step (neardup_solr.signing.encoder): unit rows, the spec recorded in the settings, your own encoder,
and the refusals, without Solr. The in-package model is wordllama's (its weights in its wheel)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_solr.errors import EncoderError, InvalidParameterError, SettingsConflictError
from neardup_solr.signing.builder import DocumentBuilder
from neardup_solr.signing.encoder import (
    CallableEncoder,
    encoder_for,
    in_package_encoder,
    unit_rows,
    use_encoder,
    vector_value,
)
from neardup_solr.signing.settings import IndexSettings


def test_unit_rows_normalise_and_leave_a_zero_row_zero():
    rows = unit_rows([[3.0, 4.0], [0.0, 0.0]], 2, 2, "test")
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
    assert vector_value(rows[1]) is None and vector_value(rows[0]) == [0.6, 0.8]


@pytest.mark.parametrize("answer, says", [([[1.0, 2.0]], "shape"), ([[1.0, float("nan")], [1.0, 1.0]], "NaN"),
                                          ("not numbers", "not an array")])
def test_an_encoder_answer_that_is_not_one_finite_vector_per_text_is_refused(answer, says):
    with pytest.raises(EncoderError, match=says):
        unit_rows(answer, 2, 2, "my encoder")


def test_the_in_package_model_loads_offline_and_gives_unit_rows():
    encoder = in_package_encoder()
    assert encoder.spec.startswith("wordllama-l2_supercat@") and encoder.spec.endswith("/256")
    vectors = encoder.encode(["the cat sat on the mat", "a cat sat on a mat", "interest rates rose"])
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = vectors @ vectors.T
    assert cosines[0, 1] > cosines[0, 2]  # a rewording is nearer than another subject


def test_the_settings_record_the_spec_and_the_builder_writes_the_vector_field():
    encoder = in_package_encoder()
    settings = IndexSettings(encoder=encoder.spec)
    assert IndexSettings.from_json(settings.to_json()) == settings and settings.vector_dimension == 256
    assert IndexSettings.from_json(IndexSettings().to_json()).encoder is None  # stored before: no vectors
    built = DocumentBuilder(settings).build([("a", "the cat sat on the mat")])
    assert np.allclose(built.documents[0]["vector_256"], encoder.encode(["the cat sat on the mat"])[0], atol=1e-6)
    assert "vector_256" not in DocumentBuilder(IndexSettings()).build([("a", "the cat sat")]).documents[0]


@pytest.mark.parametrize("spec", ["wordllama", "a@1/100", "@1/256", "a@/256", 7])
def test_a_malformed_spec_or_a_dimension_without_a_field_is_refused(spec):
    with pytest.raises((InvalidParameterError, TypeError)):
        IndexSettings(encoder=spec)


def test_your_encoder_is_found_by_its_spec_and_another_is_refused_naming_both():
    mine = use_encoder(CallableEncoder(lambda texts: np.ones((len(texts), 128)), name="ones", version="1",
                                       dimension=128))
    assert encoder_for("ones@1/128") is mine
    with pytest.raises(SettingsConflictError, match="ones@1/128.*ones@2/128"):
        encoder_for("ones@1/128", CallableEncoder(lambda t: None, name="ones", version="2", dimension=128))
    with pytest.raises(SettingsConflictError, match="use_encoder"):
        DocumentBuilder(IndexSettings(encoder="someone-elses@3/384"))
    with pytest.raises(InvalidParameterError):
        CallableEncoder(lambda t: None, name="x", version="1", dimension=100)  # no vector field of 100


def test_a_report_by_meaning_that_would_flood_stops_with_the_way_out(monkeypatch):
    from neardup_solr.engine import meaning

    monkeypatch.setattr(meaning, "MAX_PAIRS", 3)
    matrix = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (4, 1))  # four identical vectors: six pairs
    with pytest.raises(ValueError, match="Raise --threshold"):
        list(meaning._exact_pairs(["a", "b", "c", "d"], matrix, 0.9))
    monkeypatch.setattr(meaning, "MAX_PAIRS", 6)
    assert len(list(meaning._exact_pairs(["a", "b", "c", "d"], matrix, 0.9))) == 6
