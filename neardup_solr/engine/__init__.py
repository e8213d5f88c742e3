"""The engines that find pairs: each reads what it needs from Solr (:mod:`neardup_solr.solr`) and compares with
the pure set-similarity code (:mod:`neardup_solr.pairs`). The front doors (CLI, service, Spark, the
:class:`~neardup_solr.NearDupIndex` facade) call these; nothing here imports a front door.
"""
