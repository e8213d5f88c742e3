"""Solr with BasicAuth (security.json), credentials from the environment or a config file, nothing leaked."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import subprocess
import sys

import pytest
from netutil import free_port

from neardup_solr.errors import SolrAuthError
from neardup_solr.solr.indexer import Indexer
from neardup_solr.solr.searcher import Searcher
from neardup_solr.solr.client import SolrClient, redact_url
from neardup_solr.solr.backends.local import LocalSolr

pytestmark = [pytest.mark.solr, pytest.mark.slow]

USER, PASSWORD = "dedup-bot", "Tr1cky:pa$$word@x"


def _solr_password_hash(password: str, salt: bytes) -> str:
    # Solr's Sha256AuthenticationProvider: base64(sha256(sha256(salt + password))) + " " + base64(salt)
    digest = hashlib.sha256(hashlib.sha256(salt + password.encode()).digest()).digest()
    return f"{base64.b64encode(digest).decode()} {base64.b64encode(salt).decode()}"


@pytest.fixture(scope="module")
def secured_solr(tmp_path_factory):
    home = tmp_path_factory.mktemp("secured")
    security = home / "security-src.json"
    security.write_text(json.dumps({
        "authentication": {"class": "solr.BasicAuthPlugin", "blockUnknown": True,
                           "credentials": {USER: _solr_password_hash(PASSWORD, os.urandom(32))}},
        "authorization": {"class": "solr.RuleBasedAuthorizationPlugin",
                          "permissions": [{"name": "all", "role": "admin"}], "user-role": {USER: "admin"}},
    }))
    solr = LocalSolr(port=free_port(), data_dir=home / "solr", auth=(USER, PASSWORD), security_json=security)
    solr.start()
    yield solr
    solr.stop()


def test_credentials_from_environment_work(secured_solr, monkeypatch):
    monkeypatch.setenv("SOLR_USERNAME", USER)
    monkeypatch.setenv("SOLR_PASSWORD", PASSWORD)
    client = SolrClient(secured_solr.core_url)
    client.delete_all()
    Indexer(client).index_records([("1", "secured text number one"), ("2", "secured text number one!")])
    assert [m.id for m in Searcher(client).find_near_dups("1")] == ["2"]


def test_credentials_from_config_file_work(secured_solr, monkeypatch, tmp_path):
    monkeypatch.delenv("SOLR_USERNAME", raising=False)
    monkeypatch.delenv("SOLR_PASSWORD", raising=False)
    config = tmp_path / "config.ini"
    config.write_text(f"[solr]\nusername = {USER}\npassword = {PASSWORD}\n")
    monkeypatch.setenv("NEARDUP_CONFIG", str(config))
    assert SolrClient(secured_solr.core_url).ping()


def test_wrong_or_missing_credentials_fail_clearly_without_leaking(secured_solr, monkeypatch, caplog):
    monkeypatch.setenv("SOLR_USERNAME", USER)
    monkeypatch.setenv("SOLR_PASSWORD", "wrong-" + PASSWORD)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SolrAuthError) as info:
        SolrClient(secured_solr.core_url).check()
    message = str(info.value)
    assert "HTTP 401" in message and "credentials" in message
    assert PASSWORD not in message and PASSWORD not in caplog.text

    monkeypatch.delenv("SOLR_USERNAME")
    monkeypatch.delenv("SOLR_PASSWORD")
    monkeypatch.setenv("NEARDUP_CONFIG", "/nonexistent")
    with pytest.raises(SolrAuthError):
        SolrClient(secured_solr.core_url).check()


def test_credentials_in_the_url_are_used_and_redacted(secured_solr, monkeypatch):
    monkeypatch.delenv("SOLR_USERNAME", raising=False)
    monkeypatch.setenv("NEARDUP_CONFIG", "/nonexistent")
    url = secured_solr.core_url.replace("http://", f"http://{USER}:{PASSWORD.replace('@', '%40')}@")
    client = SolrClient(url)
    assert client.ping()
    assert PASSWORD not in repr(client) and "@" not in client.url
    assert redact_url("https://u:p@host:8983/solr/c") == "https://host:8983/solr/c"


def test_cli_with_wrong_password_is_one_line(secured_solr, tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("1 some text here\n")
    env = {**os.environ, "SOLR_USERNAME": USER, "SOLR_PASSWORD": "nope", "NEARDUP_CONFIG": "/nonexistent"}
    proc = subprocess.run([sys.executable, "-m", "neardup_solr.cli", "index", str(path), "--solr-url",
                           secured_solr.core_url], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "refused the request (HTTP 401)" in proc.stderr
    assert "nope" not in proc.stderr


def test_https_certificates_are_verified_by_default():
    assert SolrClient("https://solr.example.invalid:8983/solr/core").session.verify is True
    assert SolrClient("https://solr.example.invalid:8983/solr/core", verify=False).session.verify is False
