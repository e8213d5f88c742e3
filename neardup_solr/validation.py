"""One validation layer for every way in: the Python API, the command line and environment variables.

Each parameter is checked on entry, before anything is sent to Solr or written to disk: its type (an integer
is not a float, a bool is not a number), its range, and NaN or infinity. A refused value raises
:class:`~neardup_solr.errors.InvalidParameterError` (a ``ValueError``) or
:class:`~neardup_solr.errors.ParameterTypeError` (also a ``TypeError``), naming the parameter as the caller
wrote it. The command line uses the same limits through :func:`parse_value` and renders the same errors with
its flag names; environment variables are read through :func:`env_int` / :func:`env_float`, whose errors name
the variable.

The limits live in :data:`LIMITS`, one entry per kind of parameter, so that ``--num-hashes``, ``num_hashes=``
and ``IndexSettings(num_hashes=...)`` accept exactly the same values. Upper limits are there so that a typo
(an extra zero or ten) is refused instead of allocating gigabytes or waiting for days.

Ids: :func:`id_problem` says why an id cannot be indexed. Ids are written unescaped into the TSV outputs
(report, threshold and join pairs) and read back by ``groups`` and ``evaluate``, which split lines on tabs,
strip each field and skip lines starting with ``#``. So ids with a tab, a newline or any other control
character, ids with white space at either end and ids starting with ``#`` are refused with a reason rather
than written into a file that would be misread.

Older indexes may still hold such ids (they were accepted before these rules). Every TSV writer therefore
writes an id through :func:`tsv_id`, which leaves every id the rules accept as it is and writes any other as
a JSON string literal (``"a\tb"``, ASCII only); every TSV reader reads a field through :func:`parse_tsv_id`,
which decodes a field that is a JSON string literal and takes any other as it is. Ids that start with ``"``
are always written quoted, so a quoted field never is an id of its own.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from neardup_solr.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "Limit", "LIMITS", "check_int", "check_float", "check_number", "check_bool", "check_choice", "check_str",
    "check_text", "check_label", "check_id", "id_problem", "record_problem", "parse_value", "env_int",
    "env_float", "MAX_ID_BYTES", "tsv_id", "parse_tsv_id",
]

# Lucene refuses a term (the id is one) longer than this many UTF-8 bytes.
MAX_ID_BYTES = 32766
DAY = 86400.0


@dataclass(frozen=True)
class Limit:
    """What one kind of parameter accepts: an integer or a finite number within [minimum, maximum]
    (``open_min``/``open_max`` exclude the bound), and a word on what it means for messages."""

    kind: str  # "int" or "float"
    minimum: float | None = None
    maximum: float | None = None
    open_min: bool = False
    open_max: bool = False
    unit: str = ""
    hint: str | None = None

    def requirement(self) -> str:
        """"an integer between 1 and 8192", "a number > 0 and <= 86400 (seconds)"..."""
        what = "an integer" if self.kind == "int" else "a finite number"
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None and not self.open_min and not self.open_max:
            text = f"{what} between {_num(lo)} and {_num(hi)}"
        else:
            parts = []
            if lo is not None:
                parts.append(f"{'>' if self.open_min else '>='} {_num(lo)}")
            if hi is not None:
                parts.append(f"{'<' if self.open_max else '<='} {_num(hi)}")
            text = f"{what} {' and '.join(parts)}" if parts else what
        return text + (f" ({self.unit})" if self.unit else "")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


LIMITS: dict[str, Limit] = {
    # How a collection is indexed (IndexSettings, Shingler, MinHash; index flags).
    "ngram": Limit("int", 1, 1000),
    "num_hashes": Limit("int", 1, 8192, unit="MinHash values"),
    "seed": Limit("int", 0, 2**32 - 1),
    "lsh_threshold": Limit("float", 0.0, 1.0, open_min=True, unit="a Jaccard similarity"),
    "bands": Limit("int", 1, 8192),
    "rows_per_band": Limit("int", 1, 8192),
    "sample_mod": Limit("int", 1, 2**31 - 1, hint="1 keeps every shingle"),
    # How the indexer runs.
    "batch_size": Limit("int", 1, 100_000),
    "commit_every": Limit("int", 1, 10**9),
    "commit_seconds": Limit("float", 0.0, DAY, open_min=True, unit="seconds"),
    "workers": Limit("int", 1, 64),
    "sign_processes": Limit("int", 1, 64),
    # The client.
    "timeout": Limit("float", 0.0, DAY, open_min=True, unit="seconds per request"),
    "max_wait": Limit("float", 0.0, DAY, unit="seconds"),
    "pool_size": Limit("int", 1, 1000, unit="connections"),
    "port": Limit("int", 0, 65535, hint="0 picks a free port"),
    # Maintenance.
    "max_segments": Limit("int", 1, None, unit="index segments"),
    # Lookups and reports.
    "rows": Limit("int", 1, 1_000_000, unit="candidates per lookup"),
    "max_edit_distance": Limit("int", 0, 10**9, hint="leave it out (null) for no limit"),  # the service's
    # A word edit-distance cap, the same in the API (max_distance=) and on the command line
    # (--max-edit-distance): no limit is None in Python and 'none' (or leaving the flag out) on the command line.
    "max_distance": Limit("int", 0, 10**9, hint="leave it out (None, or 'none' on the command line) for no limit"),
    "min_jaccard": Limit("float", 0.0, 1.0),
    "threshold": Limit("float", 0.0, 1.0, open_min=True, unit="a similarity"),
    "min_share": Limit("float", 0.0, 1.0, open_min=True, unit="a share of the text's shingles"),
    "min_recall": Limit("float", 0.0, 1.0, open_min=True, open_max=True, unit="a probability"),
    "bloom_fp_rate": Limit("float", 0.0, 0.5, open_min=True, unit="a false-positive probability",
                           hint="0.01 takes 1.2 bytes a key; each halving adds 1.44 bits a key"),
    "error_weight": Limit("float", 0.0, 1e6),
    # SolrCloud shapes.
    "nodes": Limit("int", 1, 16),
    "shards": Limit("int", 1, 256),
    "replicas": Limit("int", 1, 16),
}


def _limit(kind: str | Limit) -> Limit:
    return kind if isinstance(kind, Limit) else LIMITS[kind]


def check_int(name: str, value: Any, limit: str | Limit | None = None, *, minimum: int | None = None,
              maximum: int | None = None, none_ok: bool = False) -> Any:
    """``value`` as an ``int`` when it is an integer within the limit; raises otherwise.

    A bool is refused (``True`` is not a count), and so is a float even when whole (``128.0``): a float where
    an integer belongs is usually a computed value that went wrong, and silently truncating it would hide
    that. NumPy integers are accepted."""
    if value is None and none_ok:
        return None
    lim = _limit(limit) if limit is not None else Limit("int", minimum, maximum)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        hint = None
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            hint = f"pass the integer {int(value)}"
        elif isinstance(value, str):
            hint = "convert the text to an int first"
        raise ParameterTypeError(name, lim.requirement() + ("" if not none_ok else ", or None"), value,
                                 hint or lim.hint)
    number = int(value)
    _check_range(name, number, lim, none_ok)
    return number


def check_float(name: str, value: Any, limit: str | Limit | None = None, *, none_ok: bool = False) -> Any:
    """``value`` as a ``float`` when it is a finite real number within the limit (ints are welcome; bools,
    NaN and infinities are not)."""
    if value is None and none_ok:
        return None
    lim = _limit(limit) if limit is not None else Limit("float")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(name, lim.requirement() + ("" if not none_ok else ", or None"), value, lim.hint)
    number = float(value)
    if not math.isfinite(number):
        raise InvalidParameterError(name, lim.requirement(), value, lim.hint)
    _check_range(name, number, lim, none_ok)
    return number


def check_number(name: str, value: Any, limit: str | Limit, *, none_ok: bool = False) -> Any:
    """:func:`check_int` or :func:`check_float`, as the limit's kind says."""
    lim = _limit(limit)
    if lim.kind == "int":
        return check_int(name, value, lim, none_ok=none_ok)
    return check_float(name, value, lim, none_ok=none_ok)


def _check_range(name: str, number: float, lim: Limit, none_ok: bool) -> None:
    lo, hi = lim.minimum, lim.maximum
    if ((lo is not None and (number < lo or (lim.open_min and number == lo)))
            or (hi is not None and (number > hi or (lim.open_max and number == hi)))):
        raise InvalidParameterError(name, lim.requirement() + ("" if not none_ok else ", or None"), number,
                                    lim.hint)


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is a bool (0 and 1 are not: a flag passed positionally by mistake is caught)."""
    if not isinstance(value, bool):
        raise ParameterTypeError(name, "True or False", value)
    return value


def check_choice(name: str, value: Any, choices: Sequence[str], *, none_ok: bool = False) -> Any:
    """``value`` when it is one of ``choices``."""
    if value is None and none_ok:
        return None
    if not isinstance(value, str):
        raise ParameterTypeError(name, "one of " + ", ".join(map(repr, choices)), value)
    if value not in choices:
        raise InvalidParameterError(name, "one of " + ", ".join(map(repr, choices)), value)
    return value


def check_str(name: str, value: Any, *, none_ok: bool = False, empty_ok: bool = False) -> Any:
    """``value`` when it is a str (not empty unless ``empty_ok``)."""
    if value is None and none_ok:
        return None
    if not isinstance(value, str):
        raise ParameterTypeError(name, "a str" + (" or None" if none_ok else ""), value)
    if not empty_ok and not value.strip():
        raise InvalidParameterError(name, "a non-empty str", value)
    return value


def check_text(value: Any, name: str = "text") -> str:
    """A text to shingle: a str. Bytes are told to be decoded; anything else is named for what it is."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        raise ParameterTypeError(name, "a str", value, "decode the bytes first (e.g. data.decode('utf-8'))")
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        raise ParameterTypeError(name, "a str", value, "join the words into one text first (' '.join(words))")
    raise ParameterTypeError(name, f"a str, not {type(value).__name__}", value)


def _control_character(text: str) -> str | None:
    """The first character that breaks a line-based file (a control character, or a Unicode line or paragraph
    separator, which ``str.splitlines`` splits on), described for a message; None when there is none."""
    if text.isprintable():  # no character of those categories (one C call; the loop below is for the culprit)
        return None
    for ch in text:
        if ch.isprintable() or ch == " ":
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Zl", "Zp"):
            name = {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}.get(ch)
            return name or f"the control character U+{ord(ch):04X}"
    return None


def check_label(name: str, value: Any, *, reserved: Iterable[str] = (), none_ok: bool = True) -> Any:
    """A name such as a data set label: a non-empty str without control characters, not a reserved one."""
    if value is None and none_ok:
        return None
    check_str(name, value)
    bad = _control_character(value)
    if bad:
        raise InvalidParameterError(name, "a name without tabs, newlines or control characters", value,
                                    f"it contains {bad}")
    if value in set(reserved):
        raise InvalidParameterError(name, "a name of your own", value, "this one is reserved for neardup-solr")
    return value


def id_problem(doc_id: Any) -> str | None:
    """Why ``doc_id`` cannot be a document's id, or None when it can. Ids are str, or int (written in
    decimal); see the module docstring for why some characters are refused."""
    if doc_id is None:
        return "the id is missing (None)"
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, numbers.Integral)):
        return f"the id must be a str or an int, not {type(doc_id).__name__} ({_preview(doc_id)})"
    text = str(doc_id)
    if not text.strip():
        return "the id is empty"
    bad = _control_character(text)
    if bad:
        return (f"the id contains {bad}, which would break the TSV outputs (report, pairs, groups): remove it "
                "or replace it before indexing")
    if text != text.strip():
        return "the id starts or ends with white space, which the TSV readers strip: strip it before indexing"
    if text.startswith("#"):
        return "the id starts with '#', which marks a comment line in the TSV outputs: rename it"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        return f"the id is longer than {MAX_ID_BYTES} bytes (Lucene's limit for a term)"
    return None


def tsv_id(doc_id: Any) -> str:
    """``doc_id`` as a TSV output writes it: as it is, or as a JSON string literal when the TSV readers would
    misread it (a control character, white space at either end, empty, or a leading ``#`` or ``"``)."""
    text = str(doc_id)
    if not text or text != text.strip() or text.startswith(("#", '"')) or _control_character(text):
        return json.dumps(text, ensure_ascii=True)
    return text


def parse_tsv_id(field: str) -> str:
    """An id read from a TSV field written by :func:`tsv_id` (surrounding white space dropped)."""
    stripped = field.strip()
    if len(stripped) >= 2 and stripped[0] == '"' and stripped[-1] == '"':
        try:
            value = json.loads(stripped)
        except ValueError:
            return stripped
        if isinstance(value, str):
            return value
    return stripped


def check_id(doc_id: Any, name: str = "doc_id") -> str:
    """``doc_id`` as a str when it can be an id (see :func:`id_problem`); raises otherwise."""
    problem = id_problem(doc_id)
    if problem is not None:
        error_type = ParameterTypeError if problem.startswith("the id must be a str") else InvalidParameterError
        raise error_type(name, "a valid document id", doc_id, problem)
    return str(doc_id)


def record_problem(record: Any) -> tuple[str, str] | str:
    """``(id, text)`` of an in-memory record, or the reason it cannot be indexed.

    A record is a tuple or list of exactly two items, an id (str or int) and a text (str). A str is not a
    record even though it unpacks into two characters ("ab" would become id 'a', text 'b')."""
    if isinstance(record, (str, bytes, bytearray)):
        return (f"a record must be an (id, text) pair, got the {type(record).__name__} {_preview(record)}; "
                "pass (id, text) tuples")
    if isinstance(record, dict):
        return ("a record must be an (id, text) pair, got a dict; pass (record['id'], record['text']), or "
                "index a JSONL file")
    if not isinstance(record, (tuple, list)):
        return f"a record must be an (id, text) pair, got {type(record).__name__} {_preview(record)}"
    if len(record) != 2:
        return f"a record must be an (id, text) pair, got {len(record)} item(s): {_preview(record)}"
    doc_id, text = record
    problem = id_problem(doc_id)
    if problem is not None:
        return problem
    if text is None:
        return "the text is missing (None)"
    if isinstance(text, (bytes, bytearray)):
        return "the text is bytes, not a str: decode it first"
    if not isinstance(text, str):
        return f"the text must be a str, not {type(text).__name__}"
    return str(doc_id), text


def _preview(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------------
# Text from the command line and the environment
# ---------------------------------------------------------------------------------------------------------------


def parse_value(name: str, raw: str, limit: str | Limit) -> Any:
    """A command-line or environment string as the number the limit wants; errors name ``name`` (the flag or
    the variable). ``"128.0"`` is not an integer and ``"nan"``, ``"inf"`` are not finite."""
    lim = _limit(limit)
    text = raw.strip()
    if lim.kind == "int":
        try:
            value: Any = int(text, 10)
        except ValueError:
            raise InvalidParameterError(name, lim.requirement(), raw, lim.hint) from None
        return check_int(name, value, lim)
    try:
        value = float(text)
    except ValueError:
        raise InvalidParameterError(name, lim.requirement(), raw, lim.hint) from None
    return check_float(name, value, lim)


def env_int(var: str, default: int, limit: str | Limit) -> int:
    """An integer environment variable, or ``default`` when unset or empty; errors name the variable."""
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    return int(parse_value(var, raw, limit))


def env_float(var: str, default: float, limit: str | Limit) -> float:
    """A number from an environment variable, or ``default`` when unset or empty; errors name the variable."""
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    return float(parse_value(var, raw, limit))
