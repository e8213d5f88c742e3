"""Near-duplicate pairs checked by several processes in lockstep: the race ``check_and_add(strict=True)`` closes
(issue 47). Shared by tests/solr/engine/test_strict_check.py (a single core) and test_strict_check_cloud.py (a
local SolrCloud).

Each pair is two different texts of 60 random words from a vocabulary of 5,000, the second with one word
replaced: 55 of their 58 word 3-shingles survive, so their Jaccard is 55/61 = 0.90 (above the default collection's
threshold, 0.8). Texts of different pairs share nothing. Process ``p`` checks the ``p``-th text of every group; all
processes wait at a barrier before each group, so the checks of one group start within microseconds of each
other.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import time

from neardup_solr.engine.online import check_and_add
from neardup_solr.solr.client import SolrClient
from neardup_solr.solr.searcher import Searcher

WORDS_PER_TEXT = 60


def near_duplicate_groups(count: int, size: int = 2, seed: int = 47) -> list[list[str]]:
    """``count`` groups of ``size`` different texts, each a near duplicate (J about 0.9) of the group's first;
    no two groups alike."""
    rng = random.Random(seed)
    vocabulary = [f"w{rng.getrandbits(40):010x}" for _ in range(5000)]
    groups = []
    for _ in range(count):
        words = rng.sample(vocabulary, WORDS_PER_TEXT)
        texts = [" ".join(words)]
        for position in rng.sample(range(10, WORDS_PER_TEXT - 10), size - 1):
            variant = list(words)
            variant[position] = f"x{rng.getrandbits(40):010x}"  # a word no text holds
            texts.append(" ".join(variant))
        groups.append(texts)
    return groups


def _check_in_lockstep(url: str, process: int, groups: list[list[str]], strict: bool, prefix: str, barrier,
                       queue) -> None:
    client = SolrClient(url)
    searcher = Searcher(client)
    answers = []
    for number, texts in enumerate(groups):
        barrier.wait(timeout=120)
        started = time.perf_counter()
        result = check_and_add(client, f"{prefix}{number}-{process}", texts[process], searcher=searcher,
                               commit_within_ms=1000, strict=strict)
        answers.append((result.id, result.added, [m.id for m in result.matches], time.perf_counter() - started))
    queue.put((process, answers))


def check_in_lockstep(url: str, groups: list[list[str]], strict: bool,
                      prefix: str = "g") -> list[tuple[str, bool, list[str], float]]:
    """Check every group's texts at the same moment, one process per text position, under the ids
    ``<prefix><group>-<process>``; every answer ``(id, added, match ids, seconds)``."""
    processes = len(groups[0])
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(processes), ctx.Queue()
    workers = [ctx.Process(target=_check_in_lockstep, args=(url, p, groups, strict, prefix, barrier, queue))
               for p in range(processes)]
    for worker in workers:
        worker.start()
    answers = []
    try:
        for _ in workers:
            answers += queue.get(timeout=600)[1]
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    return answers


def admitted_per_group(answers: list[tuple[str, bool, list[str], float]], groups: int) -> list[int]:
    """How many texts of each group were added."""
    counts = [0] * groups
    for doc_id, added, _, _ in answers:
        if added:
            counts[int(doc_id.rsplit("-", 1)[0].lstrip("abcdefghijklmnopqrstuvwxyz"))] += 1
    return counts
