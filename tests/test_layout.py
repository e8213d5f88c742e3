"""The package's layout is its architecture: these tests read every module's imports (AST, nothing is run) and
hold the layers to it.

    base (errors, validation, version, options, processes)
    text/    normalise, shingle, hash, sign               -> base
    io/      inputs, readers, outputs, sample data        -> base
    pairs/   pure set similarity, no Solr                 -> base, text, io
    signing/ settings, token spelling, the document       -> base, text, io, pairs
             builder: a record signed, no Solr access
    solr/    Solr access and the backends                 -> base, text, io, pairs, signing
    engine/  the engines that find pairs                  -> base, text, io, pairs, signing, solr
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
LAYERS = ["base", "text", "io", "pairs", "signing", "solr", "engine", "front"]
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
        return False  # the facade imports every layer, so a module importing it would import them all
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
    assert not allowed("neardup_solr.signing.builder", "neardup_solr.solr.client")
    assert not allowed("neardup_solr.pairs.lsh", "neardup_solr.signing.settings")
    assert allowed("neardup_solr.solr.indexer", "neardup_solr.signing.builder")
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


# The Spark jobs sign through signing/ as the indexer does; only the module that writes to Solr talks to it.
SPARK_SOLR_WRITER = "neardup_solr.spark.solr"


def test_spark_signs_without_solr_code():
    wrong = [f"{module_name(p)} line {line}: {imported}"
             for p in MODULES if module_name(p).startswith("neardup_solr.spark") and module_name(p) != SPARK_SOLR_WRITER
             for line, imported in package_imports(p) if imported.startswith("neardup_solr.solr")]
    assert wrong == [], f"Spark modules import Solr code (sign with neardup_solr.signing): {wrong}"


def error_classes() -> set[str]:
    tree = ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def exported_names(path: Path) -> set[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)}
    return set()


# Not yet: the service's routes are being split into routers, which import OptionError from neardup_solr.errors.
EXCEPTIONS_EXPORTED_ELSEWHERE_FOR_NOW = {"neardup_solr.service.lookups"}


def test_every_exception_has_one_import_path():
    # An exception lives in neardup_solr.errors (and the package root's facade); a module that raises one imports
    # it from there and does not offer it again in its own __all__, so users find one path per class.
    errors = error_classes()
    assert {"SolrUnavailableError", "DocumentExistsError", "InputFormatError"} <= errors
    wrong = {}
    for path in MODULES:
        module = module_name(path)
        if module in ("neardup_solr", "neardup_solr.errors") or module in EXCEPTIONS_EXPORTED_ELSEWHERE_FOR_NOW:
            continue
        defined = {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                   if isinstance(node, ast.ClassDef)} & errors
        offered = exported_names(path) & errors
        if defined or offered:
            wrong[module] = sorted(defined | offered)
    assert wrong == {}, f"exceptions defined or exported outside neardup_solr.errors: {wrong}"
