"""Prometheus text-format metrics of one service process: requests by route and status, a latency histogram by
route, Solr errors by kind and Solr retries. With ``serve --workers N`` each worker counts its own requests
(a scrape reaches one of them); run one worker where exact totals matter, or scrape each.

Retries are counted from the client's own log records ("waiting for it"): the client logs every retry it
makes, so nothing in the library has to know about metrics.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _RetryCounter(logging.Handler):
    def __init__(self, metrics: "Metrics"):
        super().__init__(logging.WARNING)
        self.metrics = metrics

    def emit(self, record: logging.LogRecord) -> None:
        if "waiting for it" in str(record.msg):
            with self.metrics.lock:
                self.metrics.retries += 1


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self.latency: dict[str, list[int]] = {}
        self.latency_sum: dict[str, float] = defaultdict(float)
        self.latency_count: dict[str, int] = defaultdict(int)
        self.solr_errors: dict[str, int] = defaultdict(int)
        self.retries = 0
        logging.getLogger("neardup_solr.solr.client").addHandler(_RetryCounter(self))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self.lock:
            self.requests[(method, route, status)] += 1
            buckets = self.latency.setdefault(route, [0] * len(BUCKETS))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            self.latency_sum[route] += seconds
            self.latency_count[route] += 1

    def solr_error(self, kind: str) -> None:
        with self.lock:
            self.solr_errors[kind] += 1

    def render(self) -> str:
        lines = ["# HELP neardup_requests_total HTTP requests by method, route and status.",
                 "# TYPE neardup_requests_total counter"]
        with self.lock:
            for (method, route, status), n in sorted(self.requests.items()):
                lines.append(f'neardup_requests_total{{method="{method}",route="{_esc(route)}",status="{status}"}} {n}')
            lines += ["# HELP neardup_request_duration_seconds Request latency by route.",
                      "# TYPE neardup_request_duration_seconds histogram"]
            for route, buckets in sorted(self.latency.items()):
                r = _esc(route)
                for bound, n in zip(BUCKETS, buckets):
                    lines.append(f'neardup_request_duration_seconds_bucket{{route="{r}",le="{bound}"}} {n}')
                lines.append(f'neardup_request_duration_seconds_bucket{{route="{r}",le="+Inf"}} '
                             f"{self.latency_count[route]}")
                lines.append(f'neardup_request_duration_seconds_sum{{route="{r}"}} {self.latency_sum[route]:.6f}')
                lines.append(f'neardup_request_duration_seconds_count{{route="{r}"}} {self.latency_count[route]}')
            lines += ["# HELP neardup_solr_errors_total Requests that failed because Solr was away or failed.",
                      "# TYPE neardup_solr_errors_total counter"]
            for kind, n in sorted(self.solr_errors.items()):
                lines.append(f'neardup_solr_errors_total{{kind="{kind}"}} {n}')
            lines += ["# HELP neardup_solr_retries_total Solr calls retried by the client.",
                      "# TYPE neardup_solr_retries_total counter", f"neardup_solr_retries_total {self.retries}"]
        return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
