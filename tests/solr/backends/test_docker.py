"""The Docker backend: exercised where an engine exists, skipped cleanly where there is none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from neardup_solr.solr import settings
from neardup_solr.errors import LauncherError
from neardup_solr.solr.backends.docker import IMAGE, DockerSolr, docker_available
from repo_paths import REPO


def test_docker_backend_pins_the_launcher_version():
    assert IMAGE == f"solr:{settings.SOLR_VERSION}"


@pytest.mark.skipif(docker_available(), reason="a Docker engine is available here")
def test_without_an_engine_the_error_says_what_to_use_instead():
    with pytest.raises(LauncherError, match="neardup-solr solr start"):
        DockerSolr(port=18983).start(timeout=5)


@pytest.mark.skipif(not docker_available(), reason="no Docker engine on this machine")
def test_docker_solr_answers_ping():  # pragma: no cover - needs an engine
    solr = DockerSolr(port=18983, name="neardup-solr-sdk-test")
    try:
        result = solr.start()
        assert result.url.endswith("/solr/neardup")
    finally:
        solr.stop()


# ---------------------------------------------------------------------------------------------- docker-compose
# No engine here to run it, so the file itself is checked: what runs, which versions, which profiles, and what
# the cloud profile's init does. (The init's `solr zk upconfig` and Collections API calls were run against the
# local SolrCloud with Solr 9.10.1's own SolrCLI; the launcher tests exercise the same API calls.)


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_single_node_is_the_default_profile(compose):
    services = compose["services"]
    assert set(services) == {"solr", "neardup", "zookeeper", "solr1", "solr2", "cloud-init"}
    assert "profiles" not in services["solr"]               # `docker compose up` starts it alone
    for name in ("zookeeper", "solr1", "solr2", "cloud-init"):
        assert services[name]["profiles"] == ["cloud"], name
    assert services["solr"]["command"][0] == "solr-precreate"


def test_compose_images_match_the_launcher(compose):
    services = compose["services"]
    for name in ("solr", "solr1", "solr2", "cloud-init"):
        assert services[name]["image"] == f"solr:{settings.SOLR_VERSION}", name
    assert services["zookeeper"]["image"].startswith("zookeeper:3.9")


def test_compose_cloud_nodes_use_zookeeper_exit_on_oom_and_loopback_ports(compose):
    services = compose["services"]
    published = []
    for name in ("solr1", "solr2"):
        node = services[name]
        env = node["environment"]
        assert env["ZK_HOST"] == "zookeeper:2181"
        assert env["SOLR_HOST"] == name                      # each node registers under its own name
        assert "-XX:+ExitOnOutOfMemoryError" in env["SOLR_OPTS"].split()
        assert "-Dsolr.max.booleanClauses=1000000" in env["SOLR_OPTS"].split()
        assert node["depends_on"]["zookeeper"]["condition"] == "service_healthy"
        assert all(p.startswith("127.0.0.1:") for p in node["ports"])
        published += [p.split(":")[1] for p in node["ports"]]
    published += [p.split(":")[1] for p in services["solr"]["ports"]]
    published += [p.split(":")[1] for p in services["neardup"]["ports"]]
    assert len(published) == len(set(published))           # both profiles can run side by side
    assert services["solr1"]["volumes"] != services["solr2"]["volumes"]


def test_compose_cloud_init_uploads_the_configset_and_creates_the_collection(compose):
    init = compose["services"]["cloud-init"]
    assert {name: dep["condition"] for name, dep in init["depends_on"].items()} == {
        "solr1": "service_healthy", "solr2": "service_healthy"}
    assert init["restart"] == "no"
    script = " ".join(init["command"])
    mount_src, mount_dst = init["volumes"][0].split(":")[:2]
    assert (REPO / mount_src / "conf" / "solrconfig.xml").is_file()
    assert f"solr zk upconfig -z zookeeper:2181 -n {settings.CONFIGSET_NAME} -d {mount_dst}/conf" in script
    create = re.search(r"admin/collections\?action=CREATE&([^' ]+)", script).group(1)
    params = dict(p.split("=", 1) for p in create.split("&"))
    assert params["name"] == settings.CORE_NAME
    assert params["collection.configName"] == settings.CONFIGSET_NAME
    assert params["numShards"] == "2" and params["replicationFactor"] == "2"
    # Idempotent: an existing collection is left alone.
    assert script.index("action=LIST") < script.index("zk upconfig")
    # Compose would interpolate a bare `$`.
    assert "$" not in script.replace("$$", "")


# ---------------------------------------------------------------------------------------------- the service image


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            instructions.append((word.upper(), rest.strip()))
    return instructions


def healthcheck_url(command: str) -> str:
    found = re.search(r"https?://127\.0\.0\.1:(\d+)(/[\w/-]*)", command)
    assert found, command
    return found.group(0)


def app_paths(jobs_dir: Path) -> set[str]:
    pytest.importorskip("fastapi", reason="the service extra is not installed")
    from neardup_solr.service import ServiceConfig, create_app

    app = create_app(ServiceConfig(solr_url="http://127.0.0.1:9/solr/x", jobs_dir=jobs_dir))
    # The OpenAPI document lists every route, also those of included routers (FastAPI 0.165 wraps those in
    # app.routes, where they no longer show their paths).
    return set(app.openapi()["paths"])


def test_dockerfile_pins_its_base_installs_the_service_extra_and_runs_unprivileged():
    steps = dockerfile_instructions()
    bases = [args.split()[0] for word, args in steps if word == "FROM"]
    assert bases and all(re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+", b) for b in bases), bases
    installs = [args for word, args in steps if word == "RUN" and "pip install" in args]
    assert any("[service]" in args and ".whl" in args for args in installs), installs
    users = [args for word, args in steps if word == "USER"]
    assert users and users[-1] not in ("root", "0"), users
    last_run = max(i for i, (word, _) in enumerate(steps) if word == "RUN")
    assert max(i for i, (word, _) in enumerate(steps) if word == "USER") > last_run  # nothing runs as root after
    env = " ".join(args for word, args in steps if word == "ENV")
    assert "SOLR_URL=http://solr:8983/solr/neardup" in env
    cmd = json.loads(next(args for word, args in reversed(steps) if word == "CMD"))
    assert cmd[:2] == ["neardup-solr", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    port = cmd[cmd.index("--port") + 1]
    assert ("EXPOSE", port) in steps
    # What the build stage copies exists, and the packaging it relies on ships the Solr config.
    for word, args in steps:
        if word == "COPY" and not args.startswith("--from"):
            for source in args.split()[:-1]:
                assert (REPO / source).exists(), source


def test_dockerfile_healthcheck_asks_a_path_the_app_serves(tmp_path):
    steps = dockerfile_instructions()
    check = next(args for word, args in steps if word == "HEALTHCHECK")
    url = healthcheck_url(check)
    cmd = json.loads(next(args for word, args in reversed(steps) if word == "CMD"))
    assert url.split(":")[2].split("/")[0] == cmd[cmd.index("--port") + 1]
    assert "/" + url.split("/", 3)[3] in app_paths(tmp_path)


def test_compose_service_waits_for_solr_and_reaches_it_by_name(compose, tmp_path):
    service = compose["services"]["neardup"]
    solr = compose["services"]["solr"]
    assert service["build"] == "." and (REPO / "Dockerfile").is_file()
    assert service["depends_on"]["solr"]["condition"] == "service_healthy"
    assert "healthcheck" in solr
    core = solr["command"][1]
    assert service["environment"]["SOLR_URL"] == f"http://solr:8983/solr/{core}"
    assert service["ports"] == ["127.0.0.1:8080:8080"]
    assert service["command"][service["command"].index("--host") + 1] == "0.0.0.0"
    assert service["profiles"] == ["service"]  # a plain `docker compose up` still starts Solr alone
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD" and "/" + healthcheck_url(" ".join(test)).split("/", 3)[3] in app_paths(tmp_path)
