"""The GPU-machine bundle: what a GPU machine without a package index needs to run showwork's GPU checks.

Usage::

    python benchmarks/gpu_bundle.py build [--out build/gpu-bundle] [--data-dir DIR]      # make gpu-bundle
    python benchmarks/gpu_bundle.py verify [--bundle build/gpu-bundle] [--python python3.12]
    python3 benchmarks/gpu_bundle.py check --manifest FILE --site DIR   # where it is unpacked (gpu_machine.sh)

The GPU machine (one NVIDIA H200, Python 3.12, torch 2.11.0+cu130 and transformers 5.17 in its image) reaches no
package index, and one call to it carries at most 64 MiB: the repository's working tree plus what is named in its
``carry``. ``build`` writes one folder for that ``carry``:

- ``site-packages.tar.xz``: the packages showwork and its ``models`` extra need that the image lacks (the GPU
  tests need pytest besides, which the image has), for CPython 3.12 manylinux x86_64, installed (``pip install --target``, not compiled) and trimmed of what a
  local Ray Tune run and MLflow's SQLite store never load (:data:`TRIM`);
- ``data.tar.xz``: the data the GPU run reads (:data:`DATA_FILES`);
- ``manifest.json``: every carried package with its version, wheel and SHA-256, which of showwork's needs the
  image is taken to meet (and at which version they were resolved), what was trimmed and why, the data, and
  the sizes; ``SHA256SUMS`` for the two archives.

The project itself is not in the bundle: it travels as the working tree (tracked and untracked-not-ignored
files), whose size ``build`` counts against the same limit. torch is never carried: the image's CUDA build is
the one to use.

Which packages the image lacks is derived without the image: pip resolves showwork's requirements for Python
3.12 (``pip install --dry-run --report``, the versions pinned to this environment's where they resolve, the
image's known versions first), and every resolved package not named in ``benchmarks/gpu_image_packages.txt``
(the image's package list) is carried. ``check``, run there, compares each carried package's requirements with
what is really installed, so a list gone stale shows up as named unmet requirements before anything runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
IMAGE_PACKAGES = REPO_ROOT / "benchmarks" / "gpu_image_packages.txt"
DEFAULT_OUT = REPO_ROOT / "build" / "gpu-bundle"
WHEEL_CACHE = REPO_ROOT / "build" / "gpu-bundle-wheels"  # kept between builds, never carried
TRANSFER_LIMIT_BYTES = 64 * 2**20  # what one call to the GPU machine carries: working tree and bundle together
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
EXTRAS = ("models",)  # the built-in families the GPU run trains (the MLP, DeBERTa)
NEVER_CARRIED = ("torch",)  # the image's CUDA build is the one to use
SITE_ARCHIVE = "site-packages.tar.xz"
DATA_ARCHIVE = "data.tar.xz"
MANIFEST = "manifest.json"
CHECKSUMS = "SHA256SUMS"

# Paths under site-packages that the GPU run never loads, and why. `import ray.tune` loads ray.data, ray.train,
# ray.air and ray.dashboard's Python, so those stay; `verify` runs a real search on the trimmed tree.
TRIM = {
    "ray/jars": "Ray's Java workers (no Java API is used)",
    "ray/rllib": "RLlib, Ray's reinforcement learning",
    "ray/serve": "Ray Serve",
    "ray/llm": "Ray's LLM serving and batch inference",
    "ray/dashboard/client/build": "the dashboard's web client (showwork starts Ray with include_dashboard=False)",
    "mlflow/server/js": "the MLflow UI's web client (the GPU run serves no UI)",
}

# The data the GPU run reads, relative to the data folder ($SHOWWORK_DATA_DIR): Reuters for the MLP
# (search_spaces/reuters_mlp.yaml and benchmarks/gpu.py), its released results, the MultiNLI sample of
# benchmarks/gpu.py's DeBERTa, and the folder's README (the Makefile finds the folder by it).
DATA_FILES = (
    "README.md",
    "reuters/categories.json",
    "reuters/modapte90_train.jsonl.gz",
    "reuters/modapte90_test.jsonl.gz",
    "search-results/reuters_mlp_f1.csv",
    "nli/mnli_lmbff_kshot_480.tsv",
)


METHOD = ("carried: every package that pip's resolution of 'requirements' for CPython 3.12 manylinux x86_64 yields "
          "and 'image_packages' does not name, pinned to the versions seen on the image first, then to those of the "
          "environment that built the bundle ('pinned_by'); 'from_image': the resolved packages the image is taken to "
          "provide, at the version they were resolved against ('image_version': the one seen there, where known). "
          "benchmarks/gpu_bundle.py check, run where the bundle is unpacked, compares the carried packages' "
          "requirements with what is installed there.")


class BundleError(Exception):
    """What stops a build or a check, said in one line; ``exit_code`` 2 for bad input, 1 otherwise."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Package:
    """One resolved distribution: its name as published, version, wheel file and where its version came from."""

    name: str
    version: str
    wheel: str
    pinned_by: str  # "image" (a version seen there), "venv" (this environment's), or "resolver" (newest that fits)


# --- the pure part ----------------------------------------------------------------------------------------


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Flask_Cors`` and ``flask-cors`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_image_packages(text: str) -> dict[str, str | None]:
    """The image's packages: canonical name -> version where one was seen (``name==version``), else None."""
    packages: dict[str, str | None] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name.strip()):
            raise BundleError(f"{IMAGE_PACKAGES.name}, line {number}: not a package name: {line!r}", exit_code=2)
        packages[canonical(name.strip())] = version.strip() or None
    return packages


def requirement_name(requirement: str) -> str:
    return canonical(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1))


def read_pyproject() -> dict:
    try:
        import tomllib  # Python 3.11+: the build needs it, the check on the GPU machine does not
    except ModuleNotFoundError:
        raise BundleError("building the bundle needs Python 3.11 or later (tomllib)", exit_code=2) from None
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def project_requirements(pyproject: dict, extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """showwork's dependencies and those of ``extras`` as pyproject.toml writes them, less :data:`NEVER_CARRIED`
    and the extras' references to the project itself."""
    project = pyproject["project"]
    own = canonical(project["name"])
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return [r for r in requirements if requirement_name(r) not in {own, *map(canonical, NEVER_CARRIED)}]


def constraints(freeze: str, image: dict[str, str | None]) -> dict[str, tuple[str, str]]:
    """Pins for the resolver: canonical name -> (version, "image" | "venv"). The image's seen versions come first,
    then this environment's (``pip freeze``; local labels such as ``+cpu`` dropped, editable installs skipped)."""
    pins = {name: (version, "image") for name, version in image.items() if version}
    for line in freeze.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name and canonical(name) not in pins and canonical(name) not in map(canonical, NEVER_CARRIED):
            pins[canonical(name)] = (version.split("+", 1)[0], "venv")
    return pins


def split_closure(report: dict, image: dict[str, str | None],
                  pins: dict[str, tuple[str, str]]) -> tuple[list[Package], list[Package]]:
    """pip's resolution report split into (carried: not in the image, from the image: what the carried
    packages are resolved against there), each sorted by name."""
    carried, from_image = [], []
    for item in report["install"]:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        pinned = pins.get(canonical(name))
        package = Package(name, version, item["download_info"]["url"].rsplit("/", 1)[-1],
                          pinned[1] if pinned and pinned[0] == version else "resolver")
        (from_image if canonical(name) in image else carried).append(package)
    if any(canonical(p.name) in map(canonical, NEVER_CARRIED) for p in carried):
        raise BundleError(f"the resolution carries one of {', '.join(NEVER_CARRIED)}: the image's build must be used")
    key = lambda p: canonical(p.name)  # noqa: E731
    return sorted(carried, key=key), sorted(from_image, key=key)


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def trim(site: Path, rules: dict[str, str] = TRIM) -> list[dict]:
    """Remove each rule's path under ``site``; what was removed, its bytes and why (a rule matching nothing says 0)."""
    removed = []
    for path, why in rules.items():
        target = site / path
        size = tree_bytes(target) if target.is_dir() else (target.stat().st_size if target.exists() else 0)
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        removed.append({"path": path, "why": why, "bytes": size})
    return removed


def over_limit(sizes: dict[str, int], limit: int = TRANSFER_LIMIT_BYTES) -> str | None:
    """Why ``sizes`` (bytes by part) do not fit in one call, or None when they do."""
    total = sum(sizes.values())
    if total <= limit:
        return None
    parts = ", ".join(f"{name} {mib(size)}" for name, size in sizes.items())
    return f"the bundle and the working tree come to {mib(total)}, over the {mib(limit)} one call carries ({parts})"


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def unmet_requirements(carried: list[str], extras: dict[str, list[str]]) -> list[str]:
    """For each carried distribution installed here, each requirement (with its ``extras``) that the installed
    distributions do not meet: ``"mlflow-skinny 3.17.2 needs protobuf<7,>=3.12.0; found 7.36.2"``."""
    import importlib.metadata

    from packaging.requirements import Requirement

    problems = []
    for name in carried:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed")
            continue
        for line in dist.requires or ():
            requirement = Requirement(line)
            wanted = [""] + extras.get(canonical(name), [])
            if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in wanted):
                continue
            try:
                found = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                problems.append(f"{dist.name} {dist.version} needs {requirement}; not installed")
                continue
            if requirement.specifier and not requirement.specifier.contains(found, prereleases=True):
                problems.append(f"{dist.name} {dist.version} needs {requirement}; found {found}")
    return problems


def requested_extras(requirements: list[str]) -> dict[str, list[str]]:
    """``ray[tune]==2.60.0`` -> {"ray": ["tune"]}: the extras whose requirements the carried packages must meet."""
    extras: dict[str, list[str]] = {}
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*\[([^\]]*)\]", requirement)
        if match:
            extras.setdefault(canonical(match.group(1)), []).extend(e.strip() for e in match.group(2).split(","))
    return extras


# --- the edges: pip, files, archives ------------------------------------------------------------------------


def target_options() -> list[str]:
    options = ["--only-binary", ":all:", "--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for platform in PLATFORMS:
        options += ["--platform", platform]
    return options


def pip(*arguments: str, python: str = sys.executable) -> str:
    done = subprocess.run([python, "-m", "pip", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        detail = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or done.stderr.splitlines()[-3:]
        raise BundleError(f"pip {arguments[0]} failed: {' '.join(detail).strip()}")
    return done.stdout


def resolve(requirements: list[str], pins: dict[str, tuple[str, str]], work: Path) -> dict:
    """pip's resolution of ``requirements`` for CPython 3.12 manylinux x86_64, under ``pins`` (nothing downloaded
    but metadata)."""
    (work / "requirements.txt").write_text("\n".join(requirements) + "\n")
    (work / "constraints.txt").write_text("".join(f"{name}=={version}\n" for name, (version, _) in sorted(pins.items())))
    pip("install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(work / "report.json"),
        "--target", str(work / "unused"), *target_options(), "-r", str(work / "requirements.txt"),
        "-c", str(work / "constraints.txt"))
    return json.loads((work / "report.json").read_text())


def download(packages: list[Package], folder: Path, python: str = sys.executable) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    pip("download", "--quiet", "--no-deps", *target_options(), "-d", str(folder),
        *(f"{p.name}=={p.version}" for p in packages), python=python)
    wheels = [folder / p.wheel for p in packages]
    missing = [w.name for w in wheels if not w.exists()]
    if missing:
        raise BundleError(f"pip download did not leave {', '.join(missing)} in {folder}")
    return wheels


def install(wheels: list[Path], site: Path, python: str = sys.executable) -> None:
    """The wheels installed into ``site`` as pip installs them for Python 3.12 (``.data`` folders and scripts
    placed; nothing compiled: Python 3.12 compiles its own caches on the machine)."""
    pip("install", "--quiet", "--no-deps", "--no-index", "--no-compile", "--no-warn-script-location",
        "--target", str(site), *target_options(), *map(str, wheels), python=python)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def pack(folder: Path, archive: Path, names: list[str] | None = None) -> None:
    """``folder`` (or the ``names`` under it) as an xz tar whose members are relative to ``folder``."""
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for name in names if names is not None else sorted(p.name for p in folder.iterdir()):
            tar.add(folder / name, arcname=name)


def working_tree_bytes(repo: Path) -> int:
    """The bytes of what travels as the working tree: tracked and untracked-not-ignored files."""
    done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                          capture_output=True, check=True)
    paths = (repo / name for name in done.stdout.decode().split("\0") if name)
    return sum(p.lstat().st_size for p in paths if p.exists() or p.is_symlink())


def write_bundle(site: Path, data_dir: Path, out: Path, manifest: dict) -> dict:
    """The archives, checksums and manifest in ``out`` (emptied first); the manifest with its sizes."""
    missing = [name for name in DATA_FILES if not (data_dir / name).is_file()]
    if missing:
        raise BundleError(f"{data_dir}: missing {', '.join(missing)} (set --data-dir or SHOWWORK_DATA_DIR)", exit_code=2)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pack(site, out / SITE_ARCHIVE)
    pack(data_dir, out / DATA_ARCHIVE, list(DATA_FILES))
    archives = {name: {"bytes": (out / name).stat().st_size, "sha256": sha256(out / name)}
                for name in (SITE_ARCHIVE, DATA_ARCHIVE)}
    (out / CHECKSUMS).write_text("".join(f"{a['sha256']}  {name}\n" for name, a in archives.items()))
    manifest = {**manifest, "archives": archives,
                "data": [{"path": name, "bytes": (data_dir / name).stat().st_size, "sha256": sha256(data_dir / name)}
                         for name in DATA_FILES]}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


# --- the commands ---------------------------------------------------------------------------------------------


def build(out: Path, data_dir: Path, limit: int = TRANSFER_LIMIT_BYTES) -> dict:
    image = parse_image_packages(IMAGE_PACKAGES.read_text())
    requirements = project_requirements(read_pyproject())
    freeze = pip("freeze", "--exclude-editable")
    pins = constraints(freeze, image)
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as temp:
        work = Path(temp)
        print(f"resolving {len(requirements)} requirements for CPython {PYTHON_VERSION} manylinux x86_64 ...", flush=True)
        carried, from_image = split_closure(resolve(requirements, pins, work), image, pins)
        print(f"carried: {len(carried)} packages the image lacks; from the image: {len(from_image)}", flush=True)
        wheels = download(carried, WHEEL_CACHE)
        site = work / "site"
        install(wheels, site)
        installed = tree_bytes(site)
        trimmed = trim(site)
        manifest = {
            "method": METHOD,
            "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "target": {"python": PYTHON_VERSION, "implementation": "cp", "platforms": list(PLATFORMS)},
            "image_packages": str(IMAGE_PACKAGES.relative_to(REPO_ROOT)),
            "requirements": requirements,
            "extras": requested_extras(requirements),
            "carried": [{**asdict(p), "sha256": sha256(WHEEL_CACHE / p.wheel)} for p in carried],
            "from_image": [{**asdict(p), "image_version": image[canonical(p.name)]} for p in from_image],
            "never_carried": list(NEVER_CARRIED),
            "installed_bytes": installed,
            "trimmed": trimmed,
        }
        manifest = write_bundle(site, data_dir, out, manifest)
    sizes = {"site-packages": manifest["archives"][SITE_ARCHIVE]["bytes"], "data": manifest["archives"][DATA_ARCHIVE]["bytes"],
             "manifest": (out / MANIFEST).stat().st_size + (out / CHECKSUMS).stat().st_size,
             "working tree": working_tree_bytes(REPO_ROOT)}
    manifest["sizes"] = {**sizes, "total": sum(sizes.values()), "limit": limit}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    removed = sum(t["bytes"] for t in trimmed)
    print(f"installed {mib(installed)}, trimmed {mib(removed)} ({', '.join(t['path'] for t in trimmed)})")
    print("sizes: " + ", ".join(f"{name} {mib(size)}" for name, size in sizes.items())
          + f"; total {mib(sum(sizes.values()))} of {mib(limit)}")
    print(f"bundle: {out}")
    problem = over_limit(sizes, limit)
    if problem:
        raise BundleError(problem)
    return manifest


SMOKE_SEARCH = """
    name: bundle-smoke
    family: family.py:train
    metric: {name: score, mode: max, bounds: [0, 1]}
    num_trials: 2
    seed: 0
    resources: {cpus: 1}
    space:
      x: {distribution: uniform, low: 0.0, high: 1.0}
"""


def extract(archive: Path, folder: Path) -> None:
    """Unpack ``archive`` into ``folder`` with tarfile's "data" filter, or its refusals by hand where this Python lacks
    it (before 3.11.4, e.g. Debian's 3.11.2): no member or link target outside ``folder``, no device or FIFO."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(folder, filter="data")
            return
        root = os.path.realpath(folder)

        def inside(path: str) -> bool:
            real = os.path.realpath(path)
            return real == root or real.startswith(root + os.sep)

        for member in tar.getmembers():
            target = os.path.join(folder, member.name)
            link = os.path.join(os.path.dirname(target), member.linkname) if member.issym() else os.path.join(folder, member.linkname)
            if (os.path.isabs(member.name) or not inside(target) or member.isdev() or member.isfifo()
                    or ((member.issym() or member.islnk()) and not inside(link))):
                raise BundleError(f"{archive.name}: member {member.name!r} would land outside {folder} or is no plain file")
        tar.extractall(folder)  # noqa: S202 - every member checked above


def unpack(bundle: Path, into: Path) -> tuple[Path, Path]:
    """The bundle's site-packages and data folders unpacked under ``into``."""
    site, data = into / "site", into / "data"
    for archive, folder in ((SITE_ARCHIVE, site), (DATA_ARCHIVE, data)):
        extract(bundle / archive, folder)
    return site, data


def python_312(given: str | None) -> str:
    """``given``, else the first Python 3.12 found: ``python3.12`` on PATH, then pyenv's."""
    candidates = [given] if given else ["python3.12", *map(str, sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12")))]
    for candidate in candidates:
        try:
            done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == PYTHON_VERSION:
            return candidate
    raise BundleError(f"no Python {PYTHON_VERSION} found ({', '.join(candidates) or 'none'} tried; --python)", exit_code=2)


def verify(bundle: Path, python: str) -> None:
    """The bundle under a real CPython 3.12 with the image's part stood in for by the same versions from PyPI
    (torch aside): its requirements met, the imports, and a 2-trial ``showwork search`` (Ray Tune, MLflow's SQLite
    store) on the trimmed tree."""
    manifest = json.loads((bundle / MANIFEST).read_text())
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-verify-") as temp:
        work = Path(temp)
        site, data = unpack(bundle, work)
        image_part = [Package(p["name"], p["version"], p["wheel"], p["pinned_by"]) for p in manifest["from_image"]]
        print(f"standing in for the image: {len(image_part)} packages for Python {PYTHON_VERSION} ...", flush=True)
        install(download(image_part, WHEEL_CACHE / "image"), work / "image", python=python)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (site, work / "image", REPO_ROOT))),
               "SHOWWORK_DATA_DIR": str(data), "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONNOUSERSITE": "1"}
        checked = subprocess.run([python, str(Path(__file__).resolve()), "check", "--manifest", str(bundle / MANIFEST),
                                  "--site", str(site), "--no-cuda"], env=env)
        if checked.returncode != 0:
            raise BundleError(f"the bundle's check failed under Python {PYTHON_VERSION}")
        (work / "family.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'score': config['x']}\n")
        (work / "space.yaml").write_text(textwrap.dedent(SMOKE_SEARCH).lstrip())
        done = subprocess.run([python, "-m", "showwork", "search", "space.yaml", "--no-progress", "--num-cpus", "2"],
                              cwd=work, env=env, capture_output=True, text=True)
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
        statuses = subprocess.run([python, "-c", "from showwork.store import Ledger; "
                                   "print(*(r.status for r in Ledger('showwork_runs', 'bundle-smoke').records()))"],
                                  cwd=work, env=env, capture_output=True, text=True).stdout.split()
        if done.returncode != 0 or statuses != ["finished", "finished"]:
            raise BundleError(f"showwork search under Python {PYTHON_VERSION} exited {done.returncode} with trials {statuses}")
    print(f"verified: {bundle} under Python {PYTHON_VERSION}")


CHECKED_IMPORTS = ("ray", "ray.tune", "mlflow", "pydantic", "showwork", "showwork.cli")


def check(manifest_path: Path, site: Path, cuda: bool) -> None:
    """Where the bundle is unpacked (``site`` on ``PYTHONPATH``): each carried package's requirements met by what
    is installed, :data:`CHECKED_IMPORTS` imported from there, and with ``cuda`` the image's torch seeing a GPU."""
    import importlib

    manifest = json.loads(manifest_path.read_text())
    problems = unmet_requirements([p["name"] for p in manifest["carried"]], manifest["extras"])
    for problem in problems:
        print(f"unmet: {problem}")
    if problems:
        raise BundleError(f"{len(problems)} requirements of the carried packages are not met here")
    print(f"requirements met: {len(manifest['carried'])} carried packages")
    for name in CHECKED_IMPORTS:
        module = importlib.import_module(name)
        print(f"import {name}: {getattr(module, '__version__', '')} {module.__file__}")
    for name in ("ray", "mlflow", "pydantic"):
        if not Path(sys.modules[name].__file__).resolve().is_relative_to(site.resolve()):
            raise BundleError(f"{name} was imported from {sys.modules[name].__file__}, not from the bundle's {site}")
    if cuda:
        import torch

        if Path(torch.__file__).resolve().is_relative_to(site.resolve()):
            raise BundleError(f"torch was imported from the bundle ({torch.__file__}): the image's must be used")
        if not torch.cuda.is_available():
            raise BundleError(f"torch {torch.__version__} ({torch.__file__}) sees no GPU")
        print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) from {torch.__file__}: {torch.cuda.get_device_name(0)}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build the bundle (make gpu-bundle)")
    build_parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the bundle's folder (default {DEFAULT_OUT})")
    build_parser.add_argument("--data-dir", type=Path, help="the data folder (default $SHOWWORK_DATA_DIR, else ../shared/data)")
    verify_parser = commands.add_parser("verify", help="unpack and run the bundle under a Python 3.12 here")
    verify_parser.add_argument("--bundle", type=Path, default=DEFAULT_OUT)
    verify_parser.add_argument("--python", help=f"a Python {PYTHON_VERSION} (default: python{PYTHON_VERSION} on PATH, else pyenv's)")
    extract_parser = commands.add_parser("extract", help="unpack one of the bundle's archives (any Python 3)")
    extract_parser.add_argument("archive", type=Path)
    extract_parser.add_argument("folder", type=Path)
    check_parser = commands.add_parser("check", help="on the GPU machine: the carried packages' requirements are met")
    check_parser.add_argument("--manifest", type=Path, required=True, help="the bundle's manifest.json")
    check_parser.add_argument("--site", type=Path, required=True, help="the unpacked site-packages (on PYTHONPATH)")
    check_parser.add_argument("--no-cuda", dest="cuda", action="store_false", help="skip the GPU check (a CPU machine)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "build":
            data_dir = args.data_dir or Path(os.environ.get("SHOWWORK_DATA_DIR") or REPO_ROOT.parent / "shared" / "data")
            build(args.out.resolve(), data_dir)
        elif args.command == "verify":
            verify(args.bundle.resolve(), python_312(args.python))
        elif args.command == "extract":
            extract(args.archive, args.folder)
        else:
            check(args.manifest.resolve(), args.site, args.cuda)
    except BundleError as error:
        print(f"gpu_bundle.py: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
