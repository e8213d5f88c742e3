"""The installed package's version, for ``neardup-solr --version``, the service's OpenAPI description and the
header of every pairs and report file."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The version pip installed (the distribution's metadata); ``neardup_solr.__version__`` when the package
    runs from a source tree that was never installed."""
    try:
        return metadata.version("neardup-solr")
    except metadata.PackageNotFoundError:
        from neardup_solr import __version__

        return __version__


def written_by_line() -> str:
    """The comment line that follows the column names of every pairs and report file this tool writes, so that
    a result says which version produced it (readers skip ``#`` lines)."""
    return f"# written by neardup-solr {package_version()}\n"
