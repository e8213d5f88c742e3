"""Set similarity, pure: LSH parameters and band keys, candidate pairs and their refinement, the signature store,
prefix-filter all-pairs, Bloom filters, weighted Jaccard, groups and evaluation against gold pairs.

Nothing here talks to Solr (``tests/project/test_layout.py`` enforces it): these modules take signatures, token sets
and pairs, whoever produced them.
"""
