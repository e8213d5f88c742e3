"""Benchmark section ``service``: near-dup lookups of new texts through the HTTP service and through the Python
API, side by side in one run, at 1, 8 and 32 concurrent clients.

    python -m benchmarks.service --docs 100000 [--clients 1,8,32] [--requests 1000] [--solr-url URL]

1. A corpus of ``--docs`` documents (``benchmarks/corpus.py``, reused when already generated) is indexed with the
   LSH profile (``--fields lsh``) into the core, which is CLEARED first (``--reuse-index`` keeps a core that
   already holds exactly that corpus with that profile).
2. New texts: half are edited copies of indexed documents (a few words dropped, one repeated), half documents of
   a second corpus that is not indexed, as in ``benchmarks/run.py``'s lookup section.
3. ``neardup-solr serve`` runs in its own process(es) (``--workers``, default 1 as shipped; ``--workers 1,2``
   measures both), and for each client count the same number of lookups goes, closed loop, (a) through the
   Python API (``Searcher.find_near_dups`` in that many threads sharing one client) and (b) as ``POST
   /v1/near-dups`` with ``mode=lsh`` from that many threads with one keep-alive connection each. Both use the
   lookup the service resolves for ``mode=lsh`` (its answer's ``options``), and a sample of answers is compared
   id for id.
4. The load generator is as cheap as a client can be (:class:`LeanHttpClient`: ``http.client``, one keep-alive
   connection per thread, the JSON answer parsed): it runs on the same two cores as Solr and the service, and
   every millisecond of CPU it burns is taken from them. httpx, used until 2026-11-23, cost about 1 ms of CPU
   per request here, which the old tables counted against the service.
5. Where the CPU goes: for every row, the CPU time (user + system) that Solr's JVM, the service's processes and
   this process (the callers) used, divided by the lookups: milliseconds of CPU per lookup per component.
6. One lookup is profiled: the client's CPU per lookup (cProfile over the Python API, top functions) and Solr's
   own ``QTime`` for the candidate query.

Results: ``benchmarks/results/<date>-service-<machine>.{json,md}``. Everything (Solr, the service, the load
generator) shares this machine's cores; take the shared lock for long runs: ``flock /tmp/bench.lock python -m
benchmarks.service ...``.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import http.client
import json
import os
import pstats
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.run import _edited, machine_tag, percentiles, write_results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOALS = {"p99_ms_at_8": 30.0, "requests_per_s": 300.0, "overhead_p50_ms": 2.0}


def log(message: str) -> None:
    print(f"[service {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------------------------- data


def corpus(work: Path, docs: int, seed: int) -> tuple[Path, Path]:
    """The indexed corpus and the corpus of unseen texts (generated once, then reused)."""
    from benchmarks.corpus import generate

    made = []
    for name, n, s in (("docs", docs, seed), ("fresh", max(200, min(5000, docs // 10)), seed + 10_000)):
        out = work / f"{name}-{n}-{s}"
        meta = out / "meta.json"
        if not (meta.exists() and json.loads(meta.read_text()).get("parameters", {}).get("docs") == n):
            log(f"generating {n:,} documents -> {out}")
            generate(n, s, out)
        made.append(out)
    return made[0], made[1]


def index(solr_url: str, docs_dir: Path, docs: int, reuse: bool) -> dict[str, Any]:
    """Index the corpus with the LSH profile (unless ``reuse`` and the core holds it already)."""
    from neardup_solr import IndexSettings, Indexer, SolrClient, read_index_settings

    client = SolrClient(solr_url, timeout=600)
    settings = IndexSettings(fields=("lsh",))
    stored = read_index_settings(client)
    from neardup_solr.solr.documents import META_DATASET

    held = client.count("*:*", ["-{!term f=dataset v=$meta}"], [("meta", META_DATASET)])  # the settings not counted
    if reuse and stored == settings and held == docs:
        log(f"reusing the index of {docs:,} documents at {solr_url}")
        return {"reused": True, "docs": docs}
    client.delete_all()
    started = time.perf_counter()
    summary = Indexer(client, settings, workers=2).index_file(docs_dir / "docs.jsonl", "jsonl",
                                                             rejects_path=docs_dir / "rejects.jsonl")
    seconds = time.perf_counter() - started
    log(f"indexed {summary.indexed:,} documents in {seconds:.0f} s")
    return {"reused": False, "docs": summary.indexed, "seconds": round(seconds, 1),
            "docs_per_s": round(summary.indexed / seconds, 1)}


def segments(solr_url: str, optimize: bool) -> dict[str, Any]:
    """The core's segment count, and with ``optimize`` the merge into one segment (``neardup-solr optimize``)."""
    from neardup_solr import SolrClient
    from neardup_solr.solr.maintenance import merge_segments, segment_count

    client = SolrClient(solr_url, timeout=600)
    if not optimize:
        return {"count": segment_count(client), "merged": False}
    summary = merge_segments(client, 1)
    log(summary.format())
    return {"count": summary.segments_after, "merged": True, "before": summary.segments_before,
            "merge_seconds": summary.seconds}


def new_texts(docs_dir: Path, fresh_dir: Path, count: int, seed: int) -> list[str]:
    """``count`` texts not in the index: edited copies of indexed documents and unseen documents, alternating."""
    from benchmarks.corpus import iter_documents

    rng = random.Random(seed)
    indexed = [t for _, t in iter_documents(docs_dir)]
    unseen = [t for _, t in iter_documents(fresh_dir)]
    return [_edited(rng.choice(indexed), rng) if i % 2 == 0 else unseen[i % len(unseen)] for i in range(count)]


# ----------------------------------------------------------------------------------------------- load


def closed_loop(clients: int, texts: list[str], make_call: Callable[[], Callable[[str], object]],
                warmup: int) -> dict[str, Any]:
    """``clients`` threads, each with its own caller from ``make_call``, take the texts one by one until none
    are left; every call's latency is kept (after ``warmup`` calls per thread). Returns percentiles and rate."""
    lock = threading.Lock()
    position = 0
    latencies: list[float] = []
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)

    def worker() -> None:
        nonlocal position
        call = make_call()
        for i in range(warmup):
            call(texts[i % len(texts)])
        barrier.wait()
        mine = []
        while True:
            with lock:
                if position >= len(texts):
                    break
                text = texts[position]
                position += 1
            started = time.perf_counter()
            try:
                call(text)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the run goes on
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {**percentiles(latencies), "requests_per_s": round(len(latencies) / wall, 1), "seconds": round(wall, 2),
            "errors": len(errors), "first_error": errors[0] if errors else None}


class LeanHttpClient:
    """The load generator's connection: one keep-alive ``http.client`` connection that POSTs JSON and parses the
    JSON answer. Nothing else happens per call, so the generator takes as little CPU from the shared cores as a
    Python client can (a third of a millisecond; httpx took about a millisecond)."""

    def __init__(self, base_url: str, timeout: float = 60.0):
        parsed = urlsplit(base_url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.timeout = timeout
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post_json(self, path: str, body: dict[str, Any]) -> Any:
        payload = json.dumps(body).encode()
        try:
            self.connection.request("POST", path, body=payload, headers=_JSON_HEADERS)
            answer = self.connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The server closed an idle keep-alive connection: open a new one, once.
            self.connection.close()
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.connection.request("POST", path, body=payload, headers=_JSON_HEADERS)
            answer = self.connection.getresponse()
        data = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"POST {path}: HTTP {answer.status}: {data[:300]!r}")
        return json.loads(data)


_JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def process_cpu_seconds(pid: int, with_children: bool = False) -> float:
    """User + system CPU seconds of ``pid`` (and, with ``with_children``, of its live child processes)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc] + (proc.children(recursive=True) if with_children else [])
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for one in procs:
        try:
            times = one.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def solr_pid(solr_url: str) -> int | None:
    """The process listening on the Solr URL's port on this machine (None when it is elsewhere)."""
    import psutil

    port = urlsplit(solr_url).port
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return conn.pid
    except psutil.AccessDenied:
        return None
    return None


class CpuMeter:
    """CPU seconds used by Solr, the service and this process between :meth:`start` and :meth:`per_call`."""

    def __init__(self, solr: int | None, service: int | None):
        self.pids = {"solr": solr, "service": service}
        self.before: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        now = {"callers": process_cpu_seconds(os.getpid())}
        for name, pid in self.pids.items():
            if pid is not None:
                now[name] = process_cpu_seconds(pid, with_children=name == "service")
        return now

    def start(self) -> None:
        self.before = self._now()

    def per_call(self, calls: int) -> dict[str, float]:
        """Milliseconds of CPU per call of each component since :meth:`start`, and their sum."""
        after = self._now()
        out = {name: round((after[name] - self.before[name]) * 1000 / max(calls, 1), 3) for name in after}
        out["total"] = round(sum(out.values()), 3)
        return out


class Service:
    """``neardup-solr serve`` in its own process on a free port, until closed."""

    def __init__(self, solr_url: str, workers: int = 1):
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "neardup_solr.cli", "serve", "--port", str(self.port), "--workers", str(workers),
             "--solr-url", solr_url], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/ready", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the service did not become ready: {self.proc.stderr.read() if self.proc.stderr else ''}")
            time.sleep(0.3)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def service_options(service: Service) -> dict[str, Any]:
    """The lookup the service runs for ``{"mode": "lsh"}``, as Python API keyword arguments."""
    import httpx

    options = httpx.post(f"{service.url}/v1/near-dups", json={"text": "warm up", "mode": "lsh"},
                         timeout=30).json()["options"]
    distance = options["max_edit_distance"]
    return {"mode": options["mode"], "max_edit_distance": distance, "rows": options["rows"],
            "first_word_filter": options["first_word_filter"], "min_jaccard": options["min_jaccard"],
            "num_hashes": options["num_hashes"]}


def same_answers(service: Service, solr_url: str, texts: list[str], kw: dict[str, Any]) -> dict[str, Any]:
    """The service and the Python API agree on every answer of the sample (ids in order)."""
    import httpx

    from neardup_solr import Searcher, SolrClient

    searcher = Searcher(SolrClient(solr_url))
    differ, found = 0, 0
    with httpx.Client(base_url=service.url, timeout=60) as http:
        for text in texts:
            # The service's defaults have no edit-distance limit, so edited copies match and there are answers.
            body = {"text": text, "mode": "lsh"}
            over_http = [r["id"] for r in http.post("/v1/near-dups", json=body).json()["results"]]
            in_python = [m.id for m in searcher.find_near_dups(text=text, **{**kw, "max_edit_distance": None})]
            differ += over_http != in_python
            found += bool(in_python)
    return {"compared": len(texts), "different": differ, "with_a_match": found}


def profile_lookup(solr_url: str, texts: list[str], kw: dict[str, Any]) -> dict[str, Any]:
    """Client CPU per lookup (process time), its top functions (cProfile), and Solr's QTime."""
    from neardup_solr import Searcher, SolrClient

    client = SolrClient(solr_url)
    searcher = Searcher(client)
    for text in texts[:20]:
        searcher.find_near_dups(text=text, **kw)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for text in texts:
        searcher.find_near_dups(text=text, **kw)
    cpu_ms = (time.process_time() - cpu0) / len(texts) * 1000
    wall_ms = (time.perf_counter() - wall0) / len(texts) * 1000
    qtimes = []
    for text in texts:
        query = searcher.prepare(text)
        if kw["mode"] == "lsh" and kw["rows"] is None:  # what the lookup sends: every band candidate, unscored
            params = searcher.band_candidate_params(query, kw["first_word_filter"]) + [("rows", 500),
                                                                                      ("cursorMark", "*")]
        else:
            params = searcher.candidate_params(query, kw["mode"], kw["rows"], kw["first_word_filter"])
        qtimes.append(client.select(params)["responseHeader"]["QTime"] / 1000)
    profiler = cProfile.Profile()
    profiler.enable()
    for text in texts:
        searcher.find_near_dups(text=text, **kw)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(((v[2], f"{Path(k[0]).name}:{k[1]}({k[2]})") for k, v in stats.items()), reverse=True)[:12]
    return {"lookups": len(texts), "client_cpu_ms": round(cpu_ms, 3), "wall_ms": round(wall_ms, 3),
            "solr_qtime": percentiles(qtimes),
            "top_self_time_ms_per_lookup": {name: round(t / len(texts) * 1000, 3) for t, name in rows}}


# ----------------------------------------------------------------------------------------------- the run


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    docs_dir, fresh_dir = corpus(work, args.docs, args.seed)
    from neardup_solr.version import package_version

    report: dict[str, Any] = {"section": "service", "date": _dt.date.today().isoformat(), "machine": args.machine,
                              "neardup_solr": package_version(),
                              "docs": args.docs, "clients": args.clients, "workers": args.workers,
                              "requests": args.requests, "load_before": os.getloadavg(),
                              "load_generator": "http.client, one keep-alive connection per client thread"}
    report["index"] = index(args.solr_url, docs_dir, args.docs, args.reuse_index)
    report["index"]["segments"] = segments(args.solr_url, args.optimize)
    texts = new_texts(docs_dir, fresh_dir, args.requests + 200, args.seed)
    solr = solr_pid(args.solr_url)
    report["levels"] = []
    for workers in args.workers:
        service = Service(args.solr_url, workers=workers)
        try:
            kw = service_options(service)
            report["lookup"] = kw
            report.setdefault("agreement", same_answers(service, args.solr_url, texts[-100:], kw))
            for clients in args.clients:
                report["levels"].append(measure_level(service, solr, args, texts, kw, clients))
        finally:
            service.close()
    report["profile"] = profile_lookup(args.solr_url, texts[:args.profile_lookups], report["lookup"])
    report["load_after"] = os.getloadavg()
    report["goals"] = goals(report)
    return report


def measure_level(service: Service, solr: int | None, args: argparse.Namespace, texts: list[str],
                  kw: dict[str, Any], clients: int) -> dict[str, Any]:
    """One row: the same lookups through the Python API and through the service, with the CPU each took."""
    from neardup_solr import Searcher, SolrClient

    shared = Searcher(SolrClient(args.solr_url))

    def api_caller() -> Callable[[str], object]:
        return lambda text: shared.find_near_dups(text=text, **kw)

    def http_caller() -> Callable[[str], object]:
        http = LeanHttpClient(service.url)
        return lambda text: http.post_json("/v1/near-dups", {"text": text, "mode": "lsh"})

    measured: dict[str, Any] = {}
    cpu: dict[str, Any] = {}
    for path, caller, service_pid in (("python_api", api_caller, None),
                                      ("http_service", http_caller, service.proc.pid)):
        log(f"{service.workers} worker(s), {clients} client(s), {path}: {args.requests} lookups")
        meter = CpuMeter(solr, service_pid)
        meter.start()
        measured[path] = closed_loop(clients, texts[:args.requests], caller, warmup=args.warmup)
        # Warm-up calls count in the CPU too: clients * warmup more calls than were timed.
        cpu[path] = meter.per_call(args.requests + clients * args.warmup)
    level = {"workers": service.workers, "clients": clients, **measured, "cpu_ms_per_lookup": cpu,
             "overhead_p50_ms": round(measured["http_service"]["p50_ms"] - measured["python_api"]["p50_ms"], 3),
             "overhead_p99_ms": round(measured["http_service"]["p99_ms"] - measured["python_api"]["p99_ms"], 3)}
    log(f"  p50/p99 ms: api {measured['python_api']['p50_ms']}/{measured['python_api']['p99_ms']}, "
        f"http {measured['http_service']['p50_ms']}/{measured['http_service']['p99_ms']}; "
        f"req/s api {measured['python_api']['requests_per_s']}, http {measured['http_service']['requests_per_s']}; "
        f"cpu ms/lookup {cpu}")
    return level


def goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals, judged for each service worker count measured."""
    out = []
    for workers in report["workers"]:
        by_clients = {lv["clients"]: lv for lv in report.get("levels", []) if lv["workers"] == workers}
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        at8 = by_clients.get(8)
        if at8:
            p99 = at8["http_service"]["p99_ms"]
            out.append({"goal": f"service p99 < 30 ms at 8 clients ({label})", "measured": f"{p99} ms",
                        "met": p99 < GOALS["p99_ms_at_8"]})
        if by_clients:
            best = max(by_clients.values(), key=lambda lv: lv["http_service"]["requests_per_s"])
            rate = best["http_service"]["requests_per_s"]
            out.append({"goal": f"service >= 300 requests/s ({label})",
                        "measured": f"{rate} req/s at {best['clients']} clients",
                        "met": rate >= GOALS["requests_per_s"]})
        one = by_clients.get(1)
        if one:
            overhead = one["overhead_p50_ms"]
            out.append({"goal": f"service overhead over the Python API < 2 ms at p50, 1 client ({label})",
                        "measured": f"{overhead} ms", "met": overhead < GOALS["overhead_p50_ms"]})
    return out


def render_markdown(report: dict[str, Any]) -> str:
    lines = [f"# neardup-solr service benchmark, {report['date']} ({report['machine']})", "",
             f"{report['docs']:,} documents indexed with the LSH profile; {report['requests']:,} lookups of new texts "
             f"per row (`POST /v1/near-dups` with `mode=lsh` against `Searcher.find_near_dups` with the same "
             f"options: {report['lookup']}). Index: {report['index']['segments']['count']} segment(s)"
             + (f", merged from {report['index']['segments']['before']} in "
                f"{report['index']['segments']['merge_seconds']} s (`neardup-solr optimize`)"
                if report['index']['segments']['merged'] else ", as the bulk load left it") +
             f". Load generator: {report['load_generator']}. Load average before/after: "
             f"{', '.join(f'{x:.1f}' for x in report['load_before'])} / "
             f"{', '.join(f'{x:.1f}' for x in report['load_after'])}.", "",
             "CPU columns: milliseconds of CPU per lookup used by Solr's JVM, by the service's processes and by the "
             "callers (the Python API's threads, or the load generator), measured over the row.", "",
             "| service workers | clients | path | p50 ms | p95 ms | p99 ms | requests/s | errors "
             "| CPU Solr | CPU service | CPU callers |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for level in report["levels"]:
        for path, name in (("python_api", "Python API"), ("http_service", "HTTP service")):
            r = level[path]
            c = level["cpu_ms_per_lookup"][path]
            lines.append(f"| {level['workers']} | {level['clients']} | {name} | {r['p50_ms']} | {r['p95_ms']} | "
                         f"{r['p99_ms']} | {r['requests_per_s']} | {r['errors']} | {c.get('solr', '-')} | "
                         f"{c.get('service', '-')} | {c['callers']} |")
    lines += ["", "| service workers | clients | service overhead at p50 ms | at p99 ms |", "|---:|---:|---:|---:|"]
    lines += [f"| {lv['workers']} | {lv['clients']} | {lv['overhead_p50_ms']} | {lv['overhead_p99_ms']} |"
              for lv in report["levels"]]
    agreement = report["agreement"]
    lines += ["", f"Same answers: {agreement['compared'] - agreement['different']} of {agreement['compared']} sampled "
                  f"lookups returned the same ids in the same order through both paths "
                  f"({agreement['with_a_match']} had a match)."]
    prof = report["profile"]
    lines += ["", f"One lookup, profiled over {prof['lookups']} lookups (one client): client CPU "
                  f"{prof['client_cpu_ms']} ms, wall {prof['wall_ms']} ms, Solr QTime p50 "
                  f"{prof['solr_qtime'].get('p50_ms')} ms / p95 {prof['solr_qtime'].get('p95_ms')} ms. "
                  "Top self time per lookup (cProfile, inflated by the profiler):", "",
              "| function | ms |", "|---|---:|"]
    lines += [f"| `{name}` | {ms} |" for name, ms in prof["top_self_time_ms_per_lookup"].items()]
    lines += ["", "| goal | measured | met |", "|---|---|:---:|"]
    lines += [f"| {g['goal']} | {g['measured']} | {'yes' if g['met'] else '**no**'} |" for g in report["goals"]]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=100_000, help="documents indexed (default 100,000)")
    p.add_argument("--clients", type=lambda v: [int(x) for x in v.split(",")], default=[1, 8, 32],
                   help="concurrent clients, comma-separated (default 1,8,32)")
    p.add_argument("--workers", type=lambda v: [int(x) for x in v.split(",")], default=[1],
                   help="service worker processes, comma-separated: each is measured (default 1, as shipped)")
    p.add_argument("--requests", type=int, default=1000, help="lookups per client count and path (default 1000)")
    p.add_argument("--warmup", type=int, default=5, help="unmeasured lookups per client thread first (default 5)")
    p.add_argument("--profile-lookups", type=int, default=200, help="lookups profiled (default 200)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--solr-url", default=None, help="core to use (default $SOLR_URL, else a local Solr started "
                                                     "on a free port for the run). IT IS CLEARED.")
    p.add_argument("--reuse-index", action="store_true", help="keep the core if it holds this corpus already")
    p.add_argument("--optimize", action="store_true", help="merge the index into one segment before measuring "
                                                           "(as 'neardup-solr optimize' does after a bulk load); "
                                                           "the result files are then named ...-service-merged-...")
    p.add_argument("--work-dir", default=str(REPO / "benchmarks" / "work" / "service"))
    p.add_argument("--out-dir", default=str(REPO / "benchmarks" / "results"))
    p.add_argument("--machine", default=machine_tag())
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.solr_url = args.solr_url or os.environ.get("SOLR_URL")
    local = None
    if not args.solr_url:
        from neardup_solr.solr.backends.local import LocalSolr

        local = LocalSolr(port=free_port(), data_dir=Path(args.work_dir) / "solr", heap="2g")
        local.start()
        args.solr_url = local.core_url
    try:
        report = run(args)
    finally:
        if local is not None:
            local.stop()
    stem = write_results(args.out_dir, "service-merged" if args.optimize else "service", report,
                         render_markdown(report))
    log(f"wrote {stem}.json/.md")
    print(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
