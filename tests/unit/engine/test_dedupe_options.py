"""A dedupe run's options (engine/dedupe.py: DedupeOptions), checked when made and given one way: pure, no Solr
(the refusals come before a client is asked anything)."""

import pytest

from neardup_solr import DedupeOptions, dedupe_file
from neardup_solr.errors import InvalidParameterError, OptionError
from neardup_solr.signing.settings import META_DATASET


@pytest.mark.parametrize("keywords, param", [
    (dict(threshold=1.5), "threshold"),
    (dict(representative="shortest"), "representative"),
    (dict(dataset=META_DATASET), "dataset"),
    (dict(clear="some"), "clear"),
    (dict(clear="dataset"), "clear"),  # which data set? none was given
    (dict(clear="all", resume=True), "resume"),  # clearing would delete what the stopped run indexed
    (dict(batch_size=0), "batch_size"),
    (dict(workers=0), "workers"),
    (dict(sign_processes=0), "sign_processes"),
])
def test_bad_options_are_refused_naming_the_parameter(keywords, param):
    with pytest.raises(InvalidParameterError) as refused:
        DedupeOptions(**keywords)
    assert refused.value.param == param


def test_the_options_come_one_by_one_or_as_one_object_not_both(tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "1", "text": "a b c"}\n', encoding="utf-8")
    options = DedupeOptions.from_keywords(None, {"threshold": 0.7, "dataset": "web", "clear": "dataset"})
    assert (options.threshold, options.dataset, options.clear, options.batch_size) == (0.7, "web", "dataset", 500)
    assert DedupeOptions.from_keywords(options, {}) is options
    with pytest.raises(OptionError) as refused:
        dedupe_file(None, source, tmp_path / "out.jsonl", 0.9, options=options)
    assert refused.value.param == "threshold" and "one way" in str(refused.value)
    with pytest.raises(InvalidParameterError) as refused:  # the keywords' checks are the options' own
        dedupe_file(None, source, tmp_path / "out.jsonl", 0.8, clear="dataset")
    assert refused.value.param == "clear"


def test_a_dedupe_by_meaning_takes_the_report_options_rules():
    by_meaning = DedupeOptions(threshold=0.9, similarity="cosine")
    assert (by_meaning.method, by_meaning.pair_options().similarity) == ("exact", "cosine")
    assert DedupeOptions(threshold=0.9, similarity="cosine", method="hybrid").pair_options().method == "hybrid"
    assert (DedupeOptions().threshold, DedupeOptions().method) == (0.8, "lsh")  # by words, as before
    for keywords, param in ((dict(similarity="cosine"), "threshold"),  # a cosine's scale is the encoder's
                            (dict(threshold=0.9, similarity="cosine", method="lsh"), "method"),
                            (dict(method="knn"), "method"),
                            (dict(method="exact"), "method"),  # dedupe indexes no shingles to read
                            (dict(threshold=0.5, similarity="idf"), "similarity")):
        with pytest.raises(InvalidParameterError) as refused:
            DedupeOptions(**keywords)
        assert refused.value.param == param, keywords


def test_a_dedupe_by_meaning_without_vectors_is_refused_before_solr(tmp_path):
    from neardup_solr.signing.settings import IndexSettings

    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "1", "text": "a b c"}\n', encoding="utf-8")
    with pytest.raises(InvalidParameterError) as refused:  # before a client is made (None: the default one)
        dedupe_file(None, source, tmp_path / "out.jsonl", 0.9, similarity="cosine", settings=IndexSettings())
    assert refused.value.param == "encoder" and "--encoder" in str(refused.value)
    with pytest.raises(InvalidParameterError) as refused:
        dedupe_file(None, source, tmp_path / "out.jsonl", 0.9, similarity="cosine", method="hybrid",
                    settings=IndexSettings(encoder="wordllama-l2_supercat@0.4.0.post1/256", fields=("shingles",)))
    assert refused.value.param == "fields"
