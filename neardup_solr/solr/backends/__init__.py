"""Ways to reach a real Apache Solr: each backend starts (or finds) Solr and hands out the URL that
:class:`~neardup_solr.solr.client.SolrClient` talks to; nothing above this package knows which one it is.

- :mod:`.local`: one Solr node from Maven Central jars, no Docker (the default for the CLI and the tests);
- :mod:`.docker`: the official Solr image through the Docker SDK;
- :mod:`.cloud`: a local SolrCloud (ZooKeeper plus one JVM per node) and the Collections API for users' own
  clusters.
"""

from neardup_solr.solr.backends.base import Backend, StartResult

__all__ = ["Backend", "StartResult"]
