"""No module in showwork/ imports another module's `_private` names (project rule; issue 15, "one owner for the MLflow format")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "showwork"

# Violations left for the driver work of issue 15 (its lead removes each entry with the fix): module -> names.
ALLOWED: dict[str, set[str]] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(path: Path) -> set[tuple[str, str]]:
    """``(module, name)`` for each private name of another showwork module that ``path`` imports or reads."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> showwork module it is bound to
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("showwork"):
                continue
            for alias in node.names:
                if private(alias.name) and base != here:
                    found.add((base, alias.name))
                modules[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("showwork"):
                    modules[alias.asname or alias.name] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            owner = modules[node.value.id]
            if private(node.attr) and owner != here:
                found.add((owner, node.attr))
    return found


def test_the_checker_finds_a_private_import(tmp_path, monkeypatch):
    folder = tmp_path / "showwork" / "report"
    folder.mkdir(parents=True)
    (folder / "x.py").write_text(
        "from showwork.tracking.runs import _FINAL_METRICS, sync_ledger\nfrom ..ledger import _encode\n"
        "from . import output\nimport showwork.search as search\nsearch._Progress\noutput._copy\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "showwork")
    assert private_uses(folder / "x.py") == {
        ("showwork.tracking.runs", "_FINAL_METRICS"), ("showwork.ledger", "_encode"),
        ("showwork.search", "_Progress"), ("showwork.report.output", "_copy"),
    }


def test_no_module_imports_another_modules_private_names():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        uses = {f"{owner}.{name}" for owner, name in private_uses(path)} - ALLOWED.get(module_name(path), set())
        if uses:
            found[module_name(path)] = sorted(uses)
    assert not found, f"private names imported across modules: {found}"
    stale = {module: names for module, names in ALLOWED.items()
             if not names <= {f"{o}.{n}" for o, n in private_uses(PACKAGE.parent / (module.replace('.', '/') + '.py'))}}
    assert not stale, f"allowed violations that no longer exist (remove them): {stale}"
