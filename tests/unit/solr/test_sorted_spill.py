"""SortedSpill (neardup_solr/solr/verify.py): the acknowledged and expected ids of an index run and of verify,
sorted in bounded memory by spilling sorted runs to disk."""

from __future__ import annotations

import random

from neardup_solr.solr.verify import SortedSpill


def test_rows_come_back_in_id_order_and_repeated_ids_in_the_order_added(tmp_path):
    rng = random.Random(7)
    rows = [(f"id{rng.randrange(40):03d}", line, None) for line in range(200)]
    with SortedSpill(chunk_size=16, directory=tmp_path) as spill:
        for doc_id, line, _ in rows:
            spill.add(doc_id, line)
        assert spill.count == 200
        assert list(spill) == sorted(rows, key=lambda row: row[0])  # sorted() is stable: the lines stay in order


def test_nothing_is_written_until_a_run_spills_and_close_removes_what_was(tmp_path):
    small = SortedSpill(chunk_size=10, directory=tmp_path)
    small.extend([("b", 1), ("a", 2)])
    assert list(small) == [("a", 2, None), ("b", 1, None)]
    small.close()
    assert list(tmp_path.iterdir()) == []  # a run killed before close() leaves nothing behind either

    big = SortedSpill(chunk_size=2, directory=tmp_path)
    big.extend([("c", 1), ("b", 2), ("a", 3)])
    (spill_dir,) = tmp_path.iterdir()
    assert spill_dir.name.startswith("neardup-verify-") and len(list(spill_dir.iterdir())) == 1
    assert [row[0] for row in big] == ["a", "b", "c"]
    big.close()
    assert list(tmp_path.iterdir()) == []
