"""The installed package's version, for ``neardup-solr --version`` and the service's OpenAPI description."""

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
