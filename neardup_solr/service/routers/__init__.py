"""The service's endpoints, one router a concern: health (liveness, readiness, metrics), documents (index,
read, delete), lookups (near duplicates of a document or a text, online dedup), reports (background jobs), search (the
collection searched for a user's words, near duplicates folded) and records (a field record matched with the stored
model).

Each endpoint reads what the app holds (its Solr client, its Searcher cache, its jobs, its configuration) from
``request.app.state``, which :func:`neardup_solr.service.app.create_app` fills.
"""

from neardup_solr.service.routers import documents, health, lookups, records, reports, search

# In this order: /v1/documents/{id}/near-dups (lookups) before /v1/documents/{id} (documents), whose path
# parameter would take the rest of the path.
ROUTERS = (health.router, lookups.router, documents.router, reports.router, search.router, records.router)

__all__ = ["ROUTERS"]
