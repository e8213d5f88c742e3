"""One RSA key pair for every Solr node the suite starts, so that no node spends a second of CPU generating its own
at start (solr_config/solr_home/solr.xml says how a node is given one; Solr's own test framework gives its
nodes a pre-generated pair the same way). Made once with openssl and kept in ~/.cache/neardup-solr-test-key-pair
(not in .pytest_cache, which ``--cache-clear`` empties after this module has named the files to the JVMs); the key
signs requests between the suite's nodes on 127.0.0.1 and nothing else.

Measured on 2 cores (a single node started and stopped with the suite's JVM options, three runs each,
7 December 2026): 3.1-3.5 CPU-seconds and 2.7-3.0 s of wall time with the pair generated, 2.3 and 1.9 given.
The suite starts about sixty nodes.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

KEY_PAIR_DIR = Path.home() / ".cache" / "neardup-solr-test-key-pair"
PRIVATE_KEY = KEY_PAIR_DIR / "private.pem"  # PKCS#8 PEM, as Solr reads it
PUBLIC_KEY = KEY_PAIR_DIR / "public.der"  # X.509 DER, as Solr reads it


def _generate(openssl: str) -> None:
    KEY_PAIR_DIR.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=KEY_PAIR_DIR.parent, prefix="solr-key-pair-"))
    try:
        private, public = work / PRIVATE_KEY.name, work / PUBLIC_KEY.name
        subprocess.run([openssl, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                        "-out", str(private)], check=True, capture_output=True)
        subprocess.run([openssl, "pkey", "-in", str(private), "-pubout", "-outform", "DER", "-out", str(public)],
                       check=True, capture_output=True)
        # The pytest-xdist workers import this at once: the first rename wins, the others find its pair.
        work.rename(KEY_PAIR_DIR)
    except (OSError, subprocess.CalledProcessError):
        pass
    finally:
        shutil.rmtree(work, ignore_errors=True)


def key_pair_java_options() -> list[str]:
    """The JVM options that give a node the suite's key pair; none (each node makes its own) without openssl."""
    if not (PRIVATE_KEY.exists() and PUBLIC_KEY.exists()):
        openssl = shutil.which("openssl")
        if openssl is None:
            return []
        _generate(openssl)
        if not (PRIVATE_KEY.exists() and PUBLIC_KEY.exists()):
            return []
    return [f"-DpkiHandlerPrivateKeyPath={PRIVATE_KEY.as_uri()}", f"-DpkiHandlerPublicKeyPath={PUBLIC_KEY.as_uri()}"]
