"""The supported Pythons on this machine, each with a small virtualenv of the project's runtime dependencies and its
compiled kernel (kept in .pytest_cache/signature-venvs, so only the first run pays for them): the signature tests
that compare Pythons (unit/signing/test_signature_stability.py, solr/text/test_signatures_across_pythons.py)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from repo_paths import REPO

ROOT = REPO
VENVS = ROOT / ".pytest_cache" / "signature-venvs"
SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (X.Y): this one, ``pythonX.Y`` on the PATH, or pyenv's newest X.Y.*."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", "python")))
    # pyenv's shims are not interpreters (they fail when the version is not selected), so pyenv's own first.
    candidates = found[::-1] + [p for p in [shutil.which(f"python{version}")] if p and "shims" not in p]
    for path in candidates:
        probe = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return path
    return None


def runtime_dependencies() -> list[str]:
    """``[project] dependencies`` of pyproject.toml (read without tomllib, which 3.10 lacks)."""
    block = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.S | re.M).group(1)
    return re.findall(r'^\s*"([^"]+)"', block, re.M)


def venv_python(version: str, python: str) -> str:
    """A Python of ``version`` with the runtime dependencies, the package importable from the work tree and its
    compiled kernel built for it (next to the others: each carries its ABI tag, cpython-310-...)."""
    if python == sys.executable:
        return python  # the test's own environment, set up by scripts/setup.sh
    venv = VENVS / version
    interpreter = venv / "bin" / "python"
    wanted = "\n".join(runtime_dependencies() + ["setuptools>=68", "wheel"])
    stamp = venv / "installed.txt"
    if not interpreter.exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
    if not stamp.exists() or stamp.read_text() != wanted:
        _pip_install(interpreter, wanted.split("\n"))
        stamp.write_text(wanted)
    # A no-op when the kernel for this interpreter is newer than _kernel.c.
    build = subprocess.run([str(interpreter), "setup.py", "-q", "build_ext", "--inplace"], cwd=ROOT,
                           capture_output=True, text=True)
    if build.returncode != 0:  # its own words, not only an exit status (seen once in a fresh worktree)
        raise RuntimeError(f"building the kernel for Python {version} failed:\n{build.stderr[-3000:]}")
    return str(interpreter)


def _pip_install(interpreter: Path, requirements: list[str], attempts: int = 3) -> None:
    """pip install into another Python's venv, retried: a registry that drops one connection (seen once in CI)
    should not fail the signature tests; when every attempt fails, pip's own words are in the error."""
    for attempt in range(1, attempts + 1):
        proc = subprocess.run([str(interpreter), "-m", "pip", "install", "-q", "--retries", "5", *requirements],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            return
        if attempt < attempts:
            time.sleep(5 * attempt)
    raise RuntimeError(f"pip could not install {' '.join(requirements)} into {interpreter} after {attempts} "
                       f"attempts:\n{proc.stderr[-3000:]}")
