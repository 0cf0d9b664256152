"""The GPU machine's bundle (issue 36 item 1): ``benchmarks/gpu_bundle.py`` (``make gpu-bundle``) and the script
that runs it there, ``benchmarks/gpu_machine.sh``, as far as a machine without a GPU or a Python 3.12 image shows.

The full build (PyPI, about 115 MB of wheels, 3 minutes) and ``gpu_bundle.py verify`` (the bundle under a real
Python 3.12, a 2-trial search) are run by hand; here the same code runs on one small wheel made by the test.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_machine.sh"


def load_bundle_module():
    spec = importlib.util.spec_from_file_location("gpu_bundle", REPO / "benchmarks" / "gpu_bundle.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_bundle"] = module  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gpu_bundle = load_bundle_module()


# --- which packages the image lacks, from its list ------------------------------------------------------------


def test_the_image_list_names_its_packages_and_the_versions_seen_there():
    image = gpu_bundle.parse_image_packages(gpu_bundle.IMAGE_PACKAGES.read_text())
    assert image["torch"] == "2.11.0" and image["transformers"] == "5.17.0" and image["numpy"] == "2.5.2"
    assert image["huggingface-hub"] == "1.33.0" and image["scikit-learn"] is None  # named, version not seen
    assert "pytest" in image  # what the GPU tests need beyond showwork
    for lacking in ("ray", "mlflow", "pydantic", "sqlalchemy", "alembic", "cryptography", "flask", "gunicorn"):
        assert lacking not in image
    with pytest.raises(gpu_bundle.BundleError, match=r"line 2: not a package name: '\?\?'") as error:
        gpu_bundle.parse_image_packages("numpy==2.5.2\n??\n")
    assert error.value.exit_code == 2


def test_the_requirements_are_the_projects_and_its_models_extra_without_torch():
    requirements = gpu_bundle.project_requirements(gpu_bundle.read_pyproject())
    assert "ray[tune]==2.60.0" in requirements and "mlflow==3.17.2" in requirements
    assert any(r.startswith("pydantic") for r in requirements) and any(r.startswith("transformers") for r in requirements)
    assert not [r for r in requirements if gpu_bundle.requirement_name(r) in {"torch", "showwork-tuning"}]
    assert gpu_bundle.requested_extras(requirements) == {"ray": ["tune"]}


def test_pins_take_the_images_seen_versions_then_this_environments():
    freeze = "numpy==2.4.6\ntorch==2.13.0+cpu\nPyDantic==2.14.4\nfoo==1.0+local\n-e git+https://x/y#egg=z\n"
    pins = gpu_bundle.constraints(freeze, {"numpy": "2.5.2", "rich": None})
    assert pins == {"numpy": ("2.5.2", "image"), "pydantic": ("2.14.4", "venv"), "foo": ("1.0", "venv")}


def report(*packages: tuple[str, str]) -> dict:
    return {"install": [{"metadata": {"name": name, "version": version},
                         "download_info": {"url": f"https://files.example/{name}-{version}-py3-none-any.whl"}}
                        for name, version in packages]}


def test_the_resolution_is_split_into_what_is_carried_and_what_the_image_has():
    pins = {"numpy": ("2.5.2", "image"), "ray": ("2.60.0", "venv")}
    carried, from_image = gpu_bundle.split_closure(
        report(("ray", "2.60.0"), ("numpy", "2.5.2"), ("Flask_Cors", "6.0.5")), {"numpy": "2.5.2"}, pins)
    assert [(p.name, p.pinned_by) for p in carried] == [("Flask_Cors", "resolver"), ("ray", "venv")]
    assert [(p.name, p.version, p.pinned_by, p.wheel) for p in from_image] == [
        ("numpy", "2.5.2", "image", "numpy-2.5.2-py3-none-any.whl")]
    with pytest.raises(gpu_bundle.BundleError, match="torch: the image's build must be used"):
        gpu_bundle.split_closure(report(("torch", "2.13.0")), {}, {})


# --- trimmed, and under the limit -----------------------------------------------------------------------------


def write(path: Path, size: int = 10) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def test_the_trim_removes_what_a_local_tune_run_never_loads_and_keeps_what_it_does(tmp_path):
    gone = [write(tmp_path / "ray/jars/ray_dist.jar", 1000), write(tmp_path / "ray/rllib/algorithm.py"),
            write(tmp_path / "ray/dashboard/client/build/main.js", 500), write(tmp_path / "mlflow/server/js/build/a.js")]
    kept = [write(tmp_path / "ray/tune/__init__.py"), write(tmp_path / "ray/data/__init__.py"),
            write(tmp_path / "ray/dashboard/modules/job.py"), write(tmp_path / "mlflow/server/handlers.py")]
    removed = {t["path"]: t["bytes"] for t in gpu_bundle.trim(tmp_path)}
    assert not [p for p in gone if p.exists()] and all(p.exists() for p in kept)
    assert removed["ray/jars"] == 1000 and removed["ray/dashboard/client/build"] == 500 and removed["ray/serve"] == 0
    assert set(removed) == set(gpu_bundle.TRIM)


@pytest.mark.slow
def test_nothing_trimmed_is_loaded_by_tune_or_mlflows_store():
    """In this environment's Ray and MLflow (the versions carried): the modules ``import ray.tune``, a Tuner and
    MLflow's SQLite tracking load lie outside every trimmed path."""
    code = ("import sys, ray.tune, mlflow, mlflow.tracking, mlflow.store.tracking.sqlalchemy_store; "
            "from ray.tune import Tuner; "
            "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    files = [Path(f) for f in done.stdout.splitlines() if f and "site-packages" in f]
    site = next(p for p in files[0].parents if p.name == "site-packages")
    loaded = {f.relative_to(site).as_posix() for f in files if f.is_relative_to(site)}
    assert any(f.startswith("ray/tune/") for f in loaded) and any(f.startswith("ray/data/") for f in loaded)
    assert not [f for f in loaded for trimmed in gpu_bundle.TRIM if f.startswith(trimmed + "/")]


def test_over_the_limit_names_the_total_and_each_part():
    mib = 2**20
    assert gpu_bundle.over_limit({"site-packages": 40 * mib, "working tree": 10 * mib}) is None
    assert gpu_bundle.over_limit({"site-packages": 60 * mib, "working tree": 5 * mib}) == (
        "the bundle and the working tree come to 65.0 MiB, over the 64.0 MiB one call carries "
        "(site-packages 60.0 MiB, working tree 5.0 MiB)")


# --- where it is unpacked: the check ----------------------------------------------------------------------------


def test_a_carried_package_whose_requirement_the_machine_does_not_meet_is_named(tmp_path, monkeypatch):
    info = tmp_path / "carried_thing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: carried-thing\nVersion: 1.0\n"
                                   "Requires-Dist: numpy<1\nRequires-Dist: pyyaml>=6\nRequires-Dist: absent-thing\n"
                                   "Requires-Dist: numpy<0.1; extra == 'big'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    numpy_version = importlib.metadata.version("numpy")
    assert gpu_bundle.unmet_requirements(["carried-thing", "pydantic"], {}) == [
        f"carried-thing 1.0 needs numpy<1; found {numpy_version}", "carried-thing 1.0 needs absent-thing; not installed"]
    assert len(gpu_bundle.unmet_requirements(["carried-thing"], {"carried-thing": ["big"]})) == 3
    assert gpu_bundle.unmet_requirements(["not-there"], {}) == ["not-there is not installed"]


@pytest.mark.slow
def test_the_check_refuses_ray_mlflow_or_pydantic_imported_from_elsewhere_than_the_bundle(tmp_path):
    import pydantic

    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"carried": [{"name": "pydantic"}], "extras": {}}))
    installed = Path(pydantic.__file__).parents[1]  # this environment's site-packages stands for the bundle
    gpu_bundle.check(manifest, installed, cuda=False)
    with pytest.raises(gpu_bundle.BundleError, match="ray was imported from .*, not from the bundle's"):
        gpu_bundle.check(manifest, tmp_path, cuda=False)


# --- a small bundle, built, unpacked under Python 3.12, and the script's dry run --------------------------------


def small_wheel(folder: Path) -> Path:
    """A pure-Python wheel holding stand-ins of the packages the script looks for, and a path the trim removes."""
    files = {"ray/__init__.py": "__version__ = '0.0.test'\n", "ray/tune/__init__.py": "TUNE = True\n",
             "ray/jars/ray_dist.jar": "jar\n", "mlflow/__init__.py": "", "pydantic/__init__.py": "",
             "standin-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: standin\nVersion: 1.0\n",
             "standin-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files["standin-1.0.dist-info/RECORD"] = "".join(f"{name},,\n" for name in files) + "standin-1.0.dist-info/RECORD,,\n"
    wheel = folder / "standin-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.fixture
def small_bundle(tmp_path) -> Path:
    site, data, out = tmp_path / "site", tmp_path / "data", tmp_path / "bundle"
    gpu_bundle.install([small_wheel(tmp_path)], site)
    gpu_bundle.trim(site)
    for name in gpu_bundle.DATA_FILES:
        write(data / name)
    gpu_bundle.write_bundle(site, data, out, {"carried": [{"name": "standin", "version": "1.0"}], "extras": {}})
    return out


def dry_run(bundle: Path, out: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "MLFLOW_DISABLE_TELEMETRY": "true", **(env or {})}
    env.pop("OUT", None)
    return subprocess.run(["bash", str(SCRIPT), "--dry-run", "--bundle", str(bundle), "--out", str(out), *argv],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
@pytest.mark.integration
def test_a_built_bundle_unpacks_and_imports_under_python_3_12(small_bundle, tmp_path):
    try:
        python = gpu_bundle.python_312(None)
    except gpu_bundle.BundleError as error:
        pytest.skip(str(error))
    manifest = json.loads((small_bundle / "manifest.json").read_text())
    assert [d["path"] for d in manifest["data"]] == list(gpu_bundle.DATA_FILES)
    assert sorted(p.name for p in small_bundle.iterdir()) == ["SHA256SUMS", "data.tar.xz", "manifest.json",
                                                              "site-packages.tar.xz"]
    subprocess.run([python, "-m", "tarfile", "-e", str(small_bundle / "site-packages.tar.xz"), str(tmp_path / "unpacked")],
                   check=True)
    done = subprocess.run([python, "-s", "-c", "import sys, ray.tune; print(sys.version_info[:2], ray.tune.TUNE, ray.__file__)"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "unpacked")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("(3, 12) True " + str(tmp_path / "unpacked"))
    assert not (tmp_path / "unpacked" / "ray" / "jars").exists()


@pytest.mark.slow
@pytest.mark.integration
def test_the_scripts_dry_run_checks_the_bundle_and_lists_every_step(small_bundle, tmp_path):
    done = dry_run(small_bundle, tmp_path / "out")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    for step in ("== unpack", "== check", "== tests", "== bench", "== mlp", "== done: every step passed"):
        assert step in done.stdout
    for command in ("gpu_bundle.py check --manifest", "pytest -m slow\\ or\\ not\\ slow",
                    "tests/integration/test_gpu_isolation.py tests/integration/test_gpu_trials.py",
                    "benchmarks/gpu.py --device cuda --json", "showwork validate --no-family",
                    "timeout --signal=INT --kill-after=90 480", "showwork search reuters_mlp_quarter.yaml"):
        assert command in done.stdout, command
    assert "unpacked: 1 carried packages, 6 data files" in done.stdout
    # benchmarks/gpu.py's own plan (16 trials per search by the H100's trial times), over what one call runs
    assert "The plan: " in done.stdout and "warning: the benchmark plans" in done.stdout
    assert "gpus: 0.25" in done.stdout and "max_concurrent: 4" in done.stdout and "epochs: {distribution: constant, value: 50}" in done.stdout
    assert (tmp_path / "out" / "gpu-machine.log").read_text() == done.stdout
    # The budget is a variable; the steps can be split over calls.
    only = dry_run(small_bundle, tmp_path / "out2", "--steps", "mlp")
    assert "== tests" not in only.stdout and "== check" in only.stdout and "== mlp" in only.stdout


@pytest.mark.slow
@pytest.mark.integration
def test_the_script_refuses_a_bundle_whose_archives_changed(small_bundle, tmp_path):
    with (small_bundle / "data.tar.xz").open("ab") as archive:
        archive.write(b"!")
    done = dry_run(small_bundle, tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == "gpu_machine.sh: error: the bundle's archives do not match its SHA256SUMS"
    # A budget benchmarks/gpu.py refuses fails the dry run, before any GPU is asked for.
    with (small_bundle / "data.tar.xz").open("r+b") as archive:
        archive.truncate(archive.seek(0, 2) - 1)
    short = dry_run(small_bundle, tmp_path / "out", "--steps", "bench", env={"BENCH_BUDGET_S": "60"})
    assert short.returncode == 2 and "--budget-s 60 is too small" in short.stdout
    assert short.stderr.strip() == "gpu_machine.sh: error: benchmarks/gpu.py refuses these options (above)"
    missing = dry_run(tmp_path / "nowhere", tmp_path / "out")
    assert (missing.returncode, missing.stderr.strip()) == (2, f"gpu_machine.sh: error: --bundle: no folder {tmp_path / 'nowhere'}")


# --- unpacking where tarfile has no filters (Debian's Python 3.11.2, CI's) -------------------------------------


@pytest.mark.parametrize("with_filters", [True, False], ids=["filters", "no-filters"])
def test_extract_refuses_a_member_outside_its_folder_with_or_without_tarfiles_filters(tmp_path, monkeypatch, with_filters):
    import io
    import tarfile

    if not with_filters:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)  # CI's Python 3.11.2 has none: extract checks by hand
    good, bad = tmp_path / "good.tar.xz", tmp_path / "bad.tar.xz"
    for path, name in ((good, "pkg/module.py"), (bad, "../escaped.py")):
        with tarfile.open(path, "w:xz") as tar:
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x=1"))
    gpu_bundle.extract(good, tmp_path / "site")
    assert (tmp_path / "site" / "pkg" / "module.py").read_bytes() == b"x=1"
    with pytest.raises((gpu_bundle.BundleError, tarfile.TarError)):
        gpu_bundle.extract(bad, tmp_path / "other")
    assert not (tmp_path / "escaped.py").exists()
