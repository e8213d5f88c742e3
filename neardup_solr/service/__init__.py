"""The near-duplicate HTTP service and its web page (``neardup-solr serve``; needs the ``service`` extra).

>>> from neardup_solr.service import create_app, ServiceConfig
>>> app = create_app(ServiceConfig.load(solr_url="http://127.0.0.1:8983/solr/neardup"))
"""

from neardup_solr.service.app import create_app
from neardup_solr.service.config import ServiceConfig

__all__ = ["create_app", "ServiceConfig"]
