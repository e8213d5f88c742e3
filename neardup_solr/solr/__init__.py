"""Solr access: the client and its transport, document building and index settings, the indexer, the searcher,
verification, maintenance, reading signatures in bulk, IDF from the index, and the backends that start Solr
(:mod:`neardup_solr.solr.backends`).
"""
