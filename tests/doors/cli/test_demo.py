"""`neardup-solr demo` on the local launcher, as a new user runs it: afterwards the local Solr still runs with
the default core ready, and every command the demo prints at the end works as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netutil import free_port

pytestmark = [pytest.mark.solr, pytest.mark.slow]

BIN = Path(sys.executable).parent


def test_demo_leaves_the_default_core_ready_and_its_next_commands_work(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SOLR_URL"}
    env.update(NEARDUP_SOLR_PORT=str(free_port()), NEARDUP_SOLR_HOME=str(tmp_path / "solr"),
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    try:
        demo = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "demo", "--workdir", str(tmp_path / "w")],
                              capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        lines = demo.stdout.splitlines()
        start = lines.index("next, try:")
        commands = [l.strip() for l in lines[start + 1:] if l.startswith("  ")]
        assert any(c.endswith("neardup-solr near-dups 3 --writeup-ranking") for c in commands), commands
        assert "stop it with: " in demo.stdout
        outputs = []
        for command in commands:
            run = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300, env=env,
                                 cwd=tmp_path)
            assert run.returncode == 0, f"{command}: {run.stdout}{run.stderr}"
            outputs.append(run.stdout)
        near_dups = [o for c, o in zip(commands, outputs) if "near-dups 3" in c]
        assert len(near_dups) == 2
        for out in near_dups:  # record 3 (Art's Delicatessen) and its Zagat's twin 536, in both cores
            assert out.startswith("3: Art's Delicatessen") and "536: Art's Deli" in out
    finally:
        stop = lines[-1].split("stop it with: ", 1)[1] if "demo" in locals() and demo.returncode == 0 \
            else "neardup-solr solr stop"
        subprocess.run(["bash", "-c", stop], capture_output=True, text=True, timeout=60, env=env)
