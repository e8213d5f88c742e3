"""The packaged restaurant benchmark and the preparation of its numbered address file."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from neardup_solr.io import restaurants
from neardup_solr.errors import InvalidRecordError
from neardup_solr.pairs.evaluate import read_pairs
from repo_paths import REPO as ROOT

SHARED = Path("/work/shared/data/restaurants")


@pytest.fixture(scope="module")
def address_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("restaurants") / "addresses.txt"
    assert restaurants.prepare_default(out) == 864
    return out


@pytest.fixture(scope="module")
def records(address_file) -> dict[int, str]:
    lines = address_file.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == ""  # every line, the last included, ends with a newline
    parsed = {}
    for line in lines[:-1]:
        record_id, _, text = line.partition(" ")
        parsed[int(record_id)] = text
    return parsed


def test_record_count_and_contiguous_ids(address_file, records):
    assert len(address_file.read_text(encoding="utf-8").splitlines()) == 864
    assert list(records) == list(range(1, 865))


def test_known_records(records):
    assert records[3] == "Art's Delicatessen 12224 Ventura Blvd. Studio City"
    assert records[536] == "Art's Deli 12224 Ventura Blvd. Studio City"
    assert records[1].startswith("Adriano's Ristorante")
    assert records[533].startswith("Zuni Caf&eacute;")  # the last Fodor's record (entities kept)
    assert records[534] == "Apple Pan The 10801 W. Pico Blvd. West LA"  # leading and doubled spaces gone
    assert records[864].startswith("Wa-Ha-Ka Oaxaca Mexican Grill")


def test_phones_and_cuisines_removed(records):
    for record_id, text in records.items():
        # Three digits, a slash, a digit: a phone fragment. Shorter ones are real ("28 1/2 Bowery").
        assert not re.search(r"\d{3}\s*/\s*\d", text), (record_id, text)
        assert not restaurants.PHONE_RE.search(text), (record_id, text)
        assert not re.search(r"\d{3}-\d{3}", text) or text.startswith("Au Mandarin 200-250"), (record_id, text)
    assert records[23] == "Dive! 10250 Santa Monica Blvd. Los Angeles"  # 310/788-DIVE
    assert records[229] == "Lucky Strike 59 Grand St. between Wooster St. and W. Broadway New York"  # two phones
    assert records[769] == "Deacon Burton's Soulfood Restaurant 1029 Edgewood Ave. SE Atlanta"  # phone glued to city
    assert not any(t.endswith(("American", "Italian", "French", "Asian")) for t in records.values())


def test_no_control_bytes_or_odd_whitespace(address_file, records):
    raw = address_file.read_bytes()
    assert b"\x02" not in raw and b"\r" not in raw
    for text in records.values():
        assert text == text.strip() and "  " not in text and text
        assert not re.search(r"[\x00-\x1f\x7f]", text)


def test_entities_left_for_the_normaliser(records):
    assert records[114] == "Caf&eacute; Bianco 1486 2nd Ave. between 77th and 78th Sts. New York"


def test_gold_pairs():
    pairs = read_pairs(restaurants.gold_pairs_path())
    assert len(pairs) == 112
    for a, b in pairs:
        assert 1 <= int(a) <= 533 < int(b) <= 864  # one Fodor's record, one Zagat's record
    assert ("3", "536") in pairs


def test_gold_numbering_agrees_with_phone_numbers():
    # The gold file was derived from equal phones, minus 6 shared switchboards plus 3 changed numbers:
    # if our numbering were shifted, almost no gold pair would share a phone.
    phones = []
    for path in (restaurants.fodors_path(), restaurants.zagats_path()):
        phones += [restaurants.phone_digits(phone) for _, _, phone in restaurants.iter_guide_records(path)]
    assert len(phones) == 864
    by_id = {str(i): p for i, p in enumerate(phones, start=1)}
    gold = read_pairs(restaurants.gold_pairs_path())
    assert sum(by_id[a] == by_id[b] for a, b in gold) == 109


@pytest.mark.parametrize("line, address, phone", [
    ("A 1 Main St. LA 310/246-1501 American", "A 1 Main St. LA", "310/246-1501"),
    ("A 1 Main St. LA 310-246-1501 American", "A 1 Main St. LA", "310-246-1501"),
    ("A 1 Main St. NY 212/ 759-0590 Mexican", "A 1 Main St. NY", "212/ 759-0590"),
    ("A 1 Main St. Atlanta 770/441--0291 American", "A 1 Main St. Atlanta", "770/441--0291"),
    ("Dive! 10250 Santa Monica Blvd. LA 310/788-DIVE American", "Dive! 10250 Santa Monica Blvd. LA", "310/788-DIVE"),
    ("A 1 Edgewood Ave. Atlanta404-523-1929 Soul", "A 1 Edgewood Ave. Atlanta", "404-523-1929"),
    ("A 59 Grand St.  NY 212/941-0479 or 212/941-0772 American", "A 59 Grand St. NY", "212/941-0479"),
    ("Au Mandarin 200-250 Vesey St. NY 212/385-0313 Asian", "Au Mandarin 200-250 Vesey St. NY", "212/385-0313"),
])
def test_split_phone_formats(line, address, phone):
    assert restaurants.split_phone(line) == (address, phone)


def test_split_phone_ignores_longer_digit_runs():
    assert restaurants.split_phone("A 12310/246-15012 B") is None
    assert restaurants.split_phone("No phone here 123 Main St.") is None


def test_phone_digits_equal_across_formats():
    assert restaurants.phone_digits("212/ 759-0590") == restaurants.phone_digits("212-759-0590") == "2127590590"
    assert restaurants.phone_digits("770/441--0291") == "7704410291"


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\r\n" for line in lines) + b" ")
    return path


def test_missing_phone_names_file_and_line(tmp_path):
    fodors = _write(tmp_path / "f.txt", [b"A 1 Main St. LA 310/246-1501 American\x02", b"",
                                         b"B 2 Main St. LA American\x02"])
    zagats = _write(tmp_path / "z.txt", [b"C 3 Main St. LA 310-246-1502 Delis"])
    out = tmp_path / "out.txt"
    with pytest.raises(InvalidRecordError) as info:
        restaurants.prepare_addresses(fodors, zagats, out, verify=False)
    assert info.value.line == 3 and Path(info.value.source) == fodors
    assert "f.txt" in str(info.value) and "line 3" in str(info.value)
    assert not out.exists()


def test_small_files_without_verification(tmp_path):
    fodors = _write(tmp_path / "f.txt", [b"Caf\xe9 &amp; Co 1 Main St.  LA 310/246-1501 American\x02", b"",
                                         b"B 2 Main St. LA 310/246-1502 French\x02"])
    zagats = _write(tmp_path / "z.txt", [b" C 3 Main St. LA 310-246-1503 Delis"])
    out = tmp_path / "sub" / "out.txt"
    assert restaurants.prepare_addresses(fodors, zagats, out, verify=False) == 3
    assert out.read_text(encoding="utf-8") == (
        "1 Caf\u00e9 &amp; Co 1 Main St. LA\n2 B 2 Main St. LA\n3 C 3 Main St. LA\n")
    assert restaurants.read_addresses(out) == {"1": "Caf\u00e9 &amp; Co 1 Main St. LA",
                                               "2": "B 2 Main St. LA", "3": "C 3 Main St. LA"}


def test_verification_rejects_wrong_numbering(tmp_path):
    fodors = _write(tmp_path / "f.txt", [b"A 1 Main St. LA 310/246-1501 American\x02"])
    out = tmp_path / "out.txt"
    with pytest.raises(InvalidRecordError, match="expected 533"):
        restaurants.prepare_addresses(fodors, restaurants.zagats_path(), out)
    assert not out.exists()

    records = restaurants.read_records(restaurants.fodors_path(), restaurants.zagats_path())
    records[2] = (3, "Someone Else 1 Main St.")
    with pytest.raises(InvalidRecordError, match="numbering is off"):
        restaurants.verify_records(records, 533)


def test_packaged_copies_are_byte_identical():
    if not SHARED.is_dir():
        pytest.skip("the shared data folder is not available here")
    for name in ("fodors.txt", "zagats.txt", "gold_pairs.tsv"):
        assert (restaurants.DATA_DIR / name).read_bytes() == (SHARED / name).read_bytes(), name
    packaged = (restaurants.DATA_DIR / "README.md").read_bytes()
    assert packaged.startswith((SHARED / "README.md").read_bytes())
    assert b"Provenance" in packaged[len((SHARED / "README.md").read_bytes()):]


def test_raw_file_quirks_are_as_documented():
    fodors = restaurants.fodors_path().read_bytes()
    zagats = restaurants.zagats_path().read_bytes()
    assert fodors.count(b"\r\n") == 533 and zagats.count(b"\r\n") == 331
    # One Fodor's line (Nikolai's Roof) has a stray fragment of another record after its 0x02.
    assert fodors.count(b"\x02\r\n") == 532 and fodors.count(b"\x02") == 533
    assert b"&eacute;" in fodors


def test_script(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("prepare_restaurants", ROOT / "scripts" / "prepare_restaurants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "addresses.txt"
    assert module.main(["--out", str(out)]) == 0
    assert "864" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").splitlines()[2] == "3 Art's Delicatessen 12224 Ventura Blvd. Studio City"
    assert module.main(["--fodors", str(restaurants.zagats_path()), "--out", str(tmp_path / "x.txt")]) == 1
    assert "expected 533" in capsys.readouterr().err
