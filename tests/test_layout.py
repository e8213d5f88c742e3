"""The package's layout is its architecture: these tests read every module's imports (AST, nothing is run) and
hold the layers to it.

    base (errors, validation, version, options, processes)
    text/    normalise, shingle, hash, sign               -> base
    io/      inputs, readers, outputs, sample data        -> base
    pairs/   pure set similarity, no Solr                 -> base, text, io
    solr/    Solr access and the backends                 -> base, text, io, pairs
    engine/  the engines that find pairs                  -> base, text, io, pairs, solr
    front doors: cli/, service/, spark/, neardup_index    -> everything below, never each other

One exception, stated here rather than hidden: the command line is how the service and the Spark jobs are
started (``neardup-solr serve``, ``neardup-solr spark``), so ``cli`` may import ``service`` and ``spark``.
Neither of those imports ``cli``, and no front door imports another otherwise. The package root
(``neardup_solr/__init__.py``) is the public facade and re-exports from every layer.

A module's private names (``_name``) stay inside its own part of the tree: what another part needs is public, so
nothing above the backends reaches into a backend's internals, nor an engine into the searcher's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "neardup_solr"

BASE = {"errors", "validation", "version", "options", "processes"}
LAYERS = ["base", "text", "io", "pairs", "solr", "engine", "front"]
FRONT_DOORS = {"cli", "service", "spark", "neardup_index"}
# front door -> the other front doors it may import (see the module docstring)
LAUNCHES = {"cli": {"service", "spark"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> tuple[str, str]:
    """(layer, top-level part) of a module of the package."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root", ""
    top = parts[1]
    if top in BASE:
        return "base", top
    if top in FRONT_DOORS:
        return "front", top
    return top, top


def package_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a neardup_solr module in ``path``, relative imports resolved."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "neardup_solr":
                continue
            for alias in node.names:  # `from neardup_solr.x import y` may name the module x.y
                sub = f"{target}.{alias.name}"
                is_module = (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").is_file() or \
                    (PACKAGE.parent / sub.replace(".", "/")).is_dir()
                found.append((node.lineno, sub if is_module else target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "neardup_solr"]
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "solr_config" not in p.parts)


def allowed(importer: str, imported: str) -> bool:
    (src_layer, src_top), (dst_layer, dst_top) = layer_of(importer), layer_of(imported)
    if src_layer == "root":
        return True
    if dst_layer == "root":
        # version.py reads neardup_solr.__version__ when the package was never installed
        return importer == "neardup_solr.version"
    if src_layer == "front":
        if dst_layer != "front":
            return True
        return dst_top == src_top or dst_top in LAUNCHES.get(src_top, set())
    if dst_layer == "front":
        return False
    order = {name: i for i, name in enumerate(LAYERS)}
    if src_layer == "io" and dst_layer == "text" or src_layer == "text" and dst_layer == "io":
        return False  # siblings: neither needs the other
    return order[dst_layer] <= order[src_layer]


def test_every_module_belongs_to_a_layer():
    strays = [module_name(p) for p in MODULES if layer_of(module_name(p))[0] not in LAYERS + ["root"]]
    assert strays == [], f"modules outside the layers (move them into text/, io/, pairs/, solr/ or engine/): {strays}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path):
    importer = module_name(path)
    wrong = [f"line {line}: {imported}" for line, imported in package_imports(path) if not allowed(importer, imported)]
    assert wrong == [], f"{importer} ({layer_of(importer)[0]}) imports across the layers: {wrong}"


def test_the_rules_catch_what_they_forbid():
    # The rule table itself: a pure module reaching Solr, a Solr module reaching an engine, the service
    # reaching the CLI, and Spark reaching the service are each refused; the allowed directions pass.
    assert not allowed("neardup_solr.pairs.candidates", "neardup_solr.solr.client")
    assert not allowed("neardup_solr.solr.searcher", "neardup_solr.engine.threshold")
    assert not allowed("neardup_solr.service.lookups", "neardup_solr.cli.common")
    assert not allowed("neardup_solr.spark.jobs", "neardup_solr.service.app")
    assert not allowed("neardup_solr.text.minhash", "neardup_solr.io.readers")
    assert not allowed("neardup_solr.engine.online", "neardup_solr.neardup_index")
    assert allowed("neardup_solr.engine.collection", "neardup_solr.pairs.candidates")
    assert allowed("neardup_solr.cli.serve_cmd", "neardup_solr.service.config")
    assert allowed("neardup_solr.service.app", "neardup_solr.engine.online")


def test_the_import_reader_resolves_relative_imports(tmp_path):
    # A relative import inside the package is read as the absolute module it names.
    path = PACKAGE / "text" / "minhash.py"
    imported = {m for _, m in package_imports(path)}
    assert "neardup_solr.errors" in imported and "neardup_solr.text.murmur" in imported


def private_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every ``from neardup_solr... import _name`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("neardup_solr"):
            found += [(node.lineno, node.module, a.name) for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_private_names_stay_in_their_part(path):
    importer = module_name(path)
    if layer_of(importer)[0] == "root":
        return
    wrong = [f"line {line}: {name} from {module}" for line, module, name in private_imports(path)
             if layer_of(module)[1] != layer_of(importer)[1]]
    assert wrong == [], f"{importer} imports private names of another part (make them public): {wrong}"


def test_the_private_rule_reads_names(tmp_path):
    path = PACKAGE / "text" / "shingles.py"
    assert any(name.startswith("_") for _, _, name in private_imports(path))  # within text/: allowed
    assert all(layer_of(module)[1] == "text" for _, module, _ in private_imports(path))
