"""Cross-lingual evaluation set from Debian's man pages: the same page in English, German, French and Spanish.

    python benchmarks/manpages.py --out benchmarks/work/manpages [--langs en,de,fr,es] [--max-pages 2000]

writes into ``--out``:

``corpus.jsonl``
    one page per line: ``{"id": "de:man3/malloc.3", "lang": "de", "page": "man3/malloc.3", "text": "...",
    "chars": <length of the whole rendered page>}``.
``truth.tsv``
    ``id_a<TAB>id_b<TAB>page``: every pair of corpus entries that are the same page in two languages (id_a's
    language comes first in ``--langs`` order). This is the truth for "same page, other language".
``meta.json``
    the packages and their versions, the trimming rule, counts per language and per language pair.

Where the pages come from (offline: only Debian's package archive, through apt)
    English: ``manpages`` and ``manpages-dev``; each other language L: ``manpages-L`` and ``manpages-L-dev``
    (the man-pages-l10n project's translations). The ``-dev`` halves are included because the translations
    of sections 2 and 3 (system calls, C library) live there: without them only about 180 pages per language
    also exist in English, with them 400-900. The ``.deb`` files are fetched with ``apt-get download`` (no
    installation; ``apt-get update`` is run once when apt knows no candidate) and unpacked with ``dpkg-deb -x``
    into ``~/.cache/neardup-solr-bench/manpages`` (``--cache`` to change), which later runs reuse.

Which files count as pages
    Regular files ``usr/share/man/[LANG/]manN/NAME.SECTION.gz``. Symbolic links and ``.so`` stubs are aliases
    of another page (``_exit.2`` of ``exit.2`` ...) and are skipped: kept, they would make the same text two
    "different" pages. A page is identified by ``manN/NAME.SECTION`` and pages with the same identifier in
    two languages are the same page.

Rendering
    ``man --nh --nj -l FILE`` with ``MANWIDTH=2000`` (no hyphenation, no justification, one line per
    paragraph) through ``col -b`` (drops overstrike), as man-db and groff-base install them (Debian's
    ``man-db`` and ``groff-base``; this script tells to ``apt-get install man-db groff-base`` when ``man`` is
    missing). The first and last lines (the running header ``malloc(3)  Library Functions Manual  malloc(3)``
    and the footer with the upstream version and date) are dropped: they are the same template on every page
    of a language and the footer carries no content. Runs of spaces collapse to one; paragraphs are separated
    by one blank line.

Trimming: the first ``--chars`` characters (default 1,500), cut back to the last whitespace
    A page starts with NAME (the one-line summary), SYNOPSIS and the first paragraphs of DESCRIPTION: the part
    that says what the page is about. Its end is the least page-specific part: the translated pages end with
    the same translator-credits and licence paragraphs on every page of a language (boilerplate that would
    pull all pages of one language together), the English ones with the same COLOPHON. 1,500 characters are
    about 350-450 tokens of multilingual-e5's tokenizer for these languages, within e5's 512-token window, so
    the transformer sees each trimmed page in one pass (longer inputs are windowed and averaged, which costs
    time linear in the length), and both models get exactly the same input. Pages shorter than ``--min-chars``
    (default 200) after rendering are dropped (almost empty stubs).

Sampling: ``--max-pages N`` keeps at most N pages per language. All page identifiers are put in one order by
a hash (sha1) of the identifier, and each language keeps the first N of its own pages in that order, so pages
that exist in several languages tend to be kept in all of them and the sample is the same on every run.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from pathlib import Path

DEFAULT_CACHE = Path.home() / ".cache" / "neardup-solr-bench" / "manpages"
DEFAULT_LANGS = ("en", "de", "fr", "es")
DEFAULT_CHARS = 1500
DEFAULT_MIN_CHARS = 200
MANWIDTH = 2000
_PAGE_RE = re.compile(r"^man(\w+)/([^/]+)\.gz$")


def packages_for(lang: str) -> list[str]:
    """The Debian packages that hold the pages of ``lang`` (sections 1, 4-8 and the -dev sections 2-3)."""
    return ["manpages", "manpages-dev"] if lang == "en" else [f"manpages-{lang}", f"manpages-{lang}-dev"]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _has_candidate(pkg: str) -> bool:
    out = subprocess.run(["apt-cache", "policy", pkg], capture_output=True, text=True).stdout
    m = re.search(r"Candidate:\s*(\S+)", out)
    return bool(m) and m.group(1) != "(none)"


def fetch_packages(packages: list[str], cache: Path) -> dict[str, dict]:
    """``apt-get download`` each package not yet in ``cache/debs`` and unpack it into ``cache/x/<pkg>``.

    Returns ``{pkg: {"version": ..., "deb": path, "root": unpacked dir}}``.
    """
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        if not all(_has_candidate(p) for p in missing):
            _run(["apt-get", "update"])
        # apt's sandbox user cannot write into root's home: download unsandboxed into a folder it may use.
        os.chmod(debs, 0o755)
        _run(["apt-get", "download", "-o", "APT::Sandbox::User=root", *missing], cwd=debs)
    out = {}
    for pkg in packages:
        deb = sorted(debs.glob(f"{pkg}_*.deb"))[-1]
        root = cache / "x" / pkg
        version = _run(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip()
        stamp = root / ".version"
        if not stamp.exists() or stamp.read_text() != version:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            _run(["dpkg-deb", "-x", str(deb), str(root)])
            stamp.write_text(version)
        out[pkg] = {"version": version, "deb": deb.name, "deb_bytes": deb.stat().st_size, "root": root}
    return out


def _is_so_stub(path: Path) -> bool:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        head = fh.read(400)
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.startswith(('.\\"', "'\\\"", '.\\\\"'))]
    return bool(lines) and lines[0].startswith(".so ")


def list_pages(lang: str, roots: list[Path]) -> dict[str, Path]:
    """``{"manN/NAME.SECTION": file}`` for the regular, non-stub pages of ``lang`` under ``roots``."""
    pages: dict[str, Path] = {}
    for root in roots:
        base = root / "usr" / "share" / "man"
        if lang != "en":
            base = base / lang
        if not base.is_dir():
            continue
        for f in sorted(base.glob("man*/*.gz")):
            rel = f.relative_to(base).as_posix()
            m = _PAGE_RE.match(rel)
            if not m or f.is_symlink() or not f.is_file() or _is_so_stub(f):
                continue
            pages.setdefault(f"man{m.group(1)}/{m.group(2)}", f)
    return pages


def render(path: Path) -> str:
    """The page as plain text: header and footer lines dropped, spaces collapsed, paragraphs by blank lines."""
    env = dict(os.environ, MANWIDTH=str(MANWIDTH), MAN_KEEP_FORMATTING="0", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    man = subprocess.run(["man", "--nh", "--nj", "-E", "UTF-8", "-l", str(path)], capture_output=True, env=env)
    plain = subprocess.run(["col", "-b", "-x"], input=man.stdout, capture_output=True, env=env).stdout
    lines = plain.decode("utf-8", errors="replace").splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[1:-1]  # running header, footer
    paras: list[str] = []
    cur: list[str] = []
    for ln in lines:
        ln = " ".join(ln.split())
        if ln:
            cur.append(ln)
        elif cur:
            paras.append("\n".join(cur))
            cur = []
    if cur:
        paras.append("\n".join(cur))
    return "\n\n".join(paras)


def trim(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, cut back to the last whitespace (the whole text if shorter)."""
    if len(text) <= chars:
        return text
    cut = text[:chars]
    ws = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:ws] if ws > chars // 2 else cut).rstrip()


def _order_key(page: str) -> str:
    return hashlib.sha1(page.encode()).hexdigest()


def build(out: Path, langs: list[str], max_pages: int | None, cache: Path = DEFAULT_CACHE,
          chars: int = DEFAULT_CHARS, min_chars: int = DEFAULT_MIN_CHARS, workers: int = 2) -> dict:
    if shutil.which("man") is None or shutil.which("col") is None:
        raise SystemExit("man/col missing: apt-get install man-db groff-base bsdextrautils")
    t0 = time.time()
    packages = [p for lang in langs for p in packages_for(lang)]
    fetched = fetch_packages(packages, cache)
    chosen: dict[str, dict[str, Path]] = {}
    for lang in langs:
        pages = list_pages(lang, [fetched[p]["root"] for p in packages_for(lang)])
        keys = sorted(pages, key=_order_key)
        # Over-select a little: some pages are dropped as too short after rendering.
        if max_pages:
            keys = keys[: int(max_pages * 1.1) + 10]
        chosen[lang] = {k: pages[k] for k in keys}
    jobs = [(lang, page, path) for lang in langs for page, path in chosen[lang].items()]
    with ThreadPoolExecutor(max_workers=workers) as ex:
        texts = list(ex.map(lambda j: render(j[2]), jobs))
    docs_by_lang: dict[str, list[dict]] = {lang: [] for lang in langs}
    dropped = {lang: 0 for lang in langs}
    for (lang, page, _), full in zip(jobs, texts):
        if len(full) < min_chars:
            dropped[lang] += 1
            continue
        docs_by_lang[lang].append({"id": f"{lang}:{page}", "lang": lang, "page": page,
                                   "text": trim(full, chars), "chars": len(full)})
    out.mkdir(parents=True, exist_ok=True)
    docs = []
    for lang in langs:
        kept = sorted(docs_by_lang[lang], key=lambda d: _order_key(d["page"]))
        if max_pages:
            kept = kept[:max_pages]
        docs.extend(sorted(kept, key=lambda d: d["page"]))
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    by_page: dict[str, dict[str, str]] = {}
    for d in docs:
        by_page.setdefault(d["page"], {})[d["lang"]] = d["id"]
    pair_counts: dict[str, int] = {}
    with open(out / "truth.tsv", "w", encoding="utf-8") as fh:
        fh.write("# id_a\tid_b\tpage\n")
        for page in sorted(by_page):
            have = by_page[page]
            for la, lb in combinations(langs, 2):
                if la in have and lb in have:
                    fh.write(f"{have[la]}\t{have[lb]}\t{page}\n")
                    pair_counts[f"{la}-{lb}"] = pair_counts.get(f"{la}-{lb}", 0) + 1
    meta = {
        "langs": langs,
        "packages": {p: {"version": v["version"], "deb": v["deb"], "deb_bytes": v["deb_bytes"]}
                     for p, v in fetched.items()},
        "trim_chars": chars, "min_chars": min_chars, "max_pages": max_pages, "manwidth": MANWIDTH,
        "docs_per_lang": {lang: sum(1 for d in docs if d["lang"] == lang) for lang in langs},
        "dropped_short": dropped,
        "pairs": pair_counts, "pairs_total": sum(pair_counts.values()),
        "mean_chars_full": {lang: round(sum(d["chars"] for d in docs if d["lang"] == lang)
                                        / max(1, sum(1 for d in docs if d["lang"] == lang)))
                            for lang in langs},
        "elapsed_s": round(time.time() - t0, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="output folder (corpus.jsonl, truth.tsv, meta.json)")
    ap.add_argument("--langs", default=",".join(DEFAULT_LANGS), help="comma-separated, en first (default: %(default)s)")
    ap.add_argument("--max-pages", type=int, default=None, help="at most N pages per language (default: all)")
    ap.add_argument("--chars", type=int, default=DEFAULT_CHARS, help="trim each page to N characters (%(default)s)")
    ap.add_argument("--min-chars", type=int, default=DEFAULT_MIN_CHARS, help="drop shorter pages (%(default)s)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where .debs are kept (%(default)s)")
    ap.add_argument("--workers", type=int, default=2, help="rendering processes at once (%(default)s)")
    a = ap.parse_args(argv)
    langs = [x.strip() for x in a.langs.split(",") if x.strip()]
    meta = build(a.out, langs, a.max_pages, a.cache, a.chars, a.min_chars, a.workers)
    print(json.dumps({k: meta[k] for k in ("docs_per_lang", "pairs", "pairs_total", "elapsed_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
