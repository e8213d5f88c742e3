"""Every release signs the same: the committed golden signatures (tests/golden_signatures.py says what they are and
how to change them deliberately) against what this checkout signs."""

from __future__ import annotations

import json

from golden_signatures import GOLDEN_FILE, NORMALIZERS, TEXT_SETS, UNITS, differences


def test_the_golden_file_covers_every_normaliser_version_both_units_and_a_few_hundred_texts():
    golden = json.loads(GOLDEN_FILE.read_text())
    assert sum(len(t) for t in golden["texts"].values()) >= 250
    assert {n.version for n in NORMALIZERS.values()} == {1, 2, 3}
    for set_name, versions in TEXT_SETS.items():
        assert set(golden["values"][set_name]) == set(versions)
        for fields in golden["values"][set_name].values():
            assert set(fields) == {"md5", *UNITS}
            assert all(len(rows) == len(golden["texts"][set_name]) for rows in fields.values())


def test_no_golden_signature_changed():
    found = differences(json.loads(GOLDEN_FILE.read_text()))
    assert found == [], (f"{len(found)} golden values changed; if that is meant, it needs a new normaliser or "
                         "settings version and a changelog line, then python tests/golden_signatures.py:\n"
                         + "\n".join(found[:20]))


def test_a_changed_signature_is_found(tmp_path):
    golden = json.loads(GOLDEN_FILE.read_text())
    golden["values"]["new"]["v3"]["char3"][7][0] = "0" * 16
    golden["texts"]["common"][3] = golden["texts"]["common"][3] + " x"
    found = differences(golden)
    assert any(line.startswith("new text 7 ") and "v3 char3" in line for line in found)
    assert any(line.startswith("common text 3 ") for line in found)
