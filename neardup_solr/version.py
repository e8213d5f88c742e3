"""The installed package's version, for ``neardup-solr --version``, the service's OpenAPI description and the
header of every pairs and report file."""

from __future__ import annotations

from importlib import metadata

# The source tree's version: what ``package_version`` reports when the package was never installed, and the
# package root's ``__version__``. Keep it equal to pyproject.toml's.
__version__ = "0.1.0"


def package_version() -> str:
    """The version pip installed (the distribution's metadata); ``__version__`` (above) when the package
    runs from a source tree that was never installed."""
    try:
        return metadata.version("neardup-solr")
    except metadata.PackageNotFoundError:
        return __version__


def written_by_line() -> str:
    """The comment line that follows the column names of every pairs and report file this tool writes, so that
    a result says which version produced it (readers skip ``#`` lines)."""
    return f"# written by neardup-solr {package_version()}\n"
