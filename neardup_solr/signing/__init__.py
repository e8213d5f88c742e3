"""From a record to its signed document: the index settings, the spelling of tokens, the document builder.

Pure (no Solr access), so the indexer, the searcher and the Spark jobs all sign through the same code.
"""
