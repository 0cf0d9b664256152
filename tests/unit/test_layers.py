"""The layers of showwork/ and the directions imports may take (issue 25 item 4).

Data flows space -> configs -> Ray Tune trials -> ledger -> MLflow -> statistics -> report; the
modules are layered so that a lower one never imports a higher one, at the top of a module or
inside a function. A module may import its own layer and the layers below. Every module of
showwork/ has a layer here: a new one is placed before it can land.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import showwork

# Lowest first. A name is a module of showwork/ or a sub-package (all its modules).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("showwork", "constants", "errors", "escaping", "values", "files", "redaction", "cache", "environment",
                    "energy", "isolation", "faults")),
    ("numbers and records", ("statistics", "store", "results_table", "distributions")),
    ("the search space", ("sampling", "space", "selection", "recorded", "trainable", "families")),
    ("trials and tracking", ("trials", "tracking")),
    ("the search driver", ("run",)),
    ("the report", ("report",)),
    ("the Python API", ("api", "race_results")),
    ("commands", ("cli", "__main__", "commands")),
)

# The one import against the layers: the package's facade, showwork/__init__.py, hands out the Python
# API's names (showwork.search) from a module-level __getattr__, so `import showwork` loads nothing of it.
FACADE = {"showwork": {"showwork.api"}}


def _unit(module: str) -> str:
    """``showwork.report.tables`` -> ``report``; ``showwork`` -> ``showwork``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _imports(path: Path, module: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            assert not node.level, f"{path}: a relative import (showwork imports absolutely)"
            target = node.module or ""
            if target == "showwork":  # from showwork import faults: the module named
                found.update(f"showwork.{a.name}" for a in node.names)
            elif target.startswith("showwork"):
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("showwork"))
    return found


def _modules() -> dict[str, Path]:
    root = Path(showwork.__file__).parent
    out = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def test_every_module_has_a_layer():
    placed = {name for _, names in LAYERS for name in names}
    assert len(placed) == sum(len(names) for _, names in LAYERS), "a name is in two layers"
    unplaced = sorted({_unit(m) for m in _modules()} - placed)
    assert not unplaced, f"modules without a layer (add them to LAYERS): {unplaced}"


def test_no_module_imports_a_higher_layer():
    layer_of = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
    upward = []
    for module, path in sorted(_modules().items()):
        here = layer_of[_unit(module)]
        for target in sorted(_imports(path, module) - FACADE.get(module, set())):
            there = layer_of.get(_unit(target))
            if there is not None and there > here:
                upward.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path):
    """The rule can fail: a module of the foundation importing the report is caught."""
    path = tmp_path / "values.py"
    path.write_text("def f():\n    from showwork.report import analyze\n    from showwork import cli\n")
    assert _imports(path, "showwork.values") == {"showwork.report", "showwork.cli"}
    layer_of = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}
    assert layer_of["report"] > layer_of[_unit("showwork.values")]


def test_the_facade_imports_the_api_only_when_asked():
    """The exception above is what it says: `import showwork` does not import showwork.api; showwork.search does."""
    code = ("import sys, showwork; assert 'showwork.api' not in sys.modules, 'imported at once';"
            " showwork.search; assert 'showwork.api' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(showwork.__file__).parent.parent)


# An import inside a function hides a module's dependencies from its reader and from the check above's
# reader too; it is kept only where it buys something a test or a user sees, and says so on its line
# ("# lazy: <why>", e.g. `showwork --help` must not load mlflow; a trial's process must not load
# matplotlib; an optional package). An import that only broke a cycle is not a reason: fix the cycle.
LAZY_MARK = "# lazy:"


def _unexplained_lazy_imports(path: Path) -> list[str]:
    """Imports inside functions with no reason: on its line, or on a comment line above its run of imports."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []

    def said(node: ast.stmt) -> bool:
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        return LAZY_MARK in lines[node.lineno - 1] or above.startswith(LAZY_MARK)

    def visit(node: ast.AST, in_function: bool) -> None:
        for field in ("body", "orelse", "finalbody", "handlers"):
            covered = False  # a reason above an import covers the imports right after it
            statements = getattr(node, field, None)
            for child in statements if isinstance(statements, list) else ():  # IfExp.body is an expression
                if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                    covered = covered or said(child)
                    if not covered:
                        found.append(f"{path}:{child.lineno}: {lines[child.lineno - 1].strip()}")
                else:
                    covered = False
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return found


def test_an_import_inside_a_function_says_why_it_is_lazy():
    unexplained = [line for path in sorted(_modules().values()) for line in _unexplained_lazy_imports(path)]
    assert not unexplained, (
        f"imports inside functions without a '{LAZY_MARK} <why>' comment (move them to the top of the module,"
        " or say on the line what loading late buys):\n" + "\n".join(unexplained))


def test_the_lazy_import_check_can_fail(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import os\n\n\ndef f():\n    import json\n    # lazy: the reason\n    import csv\n"
                    "    import re  # lazy: the reason\n    x = 1\n    import io\n    return json, csv, re, io, os, x\n"
                    "\n\ndef g():\n    # lazy: the reason\n    import json\n\n    from os import path\n    return json, path\n")
    assert _unexplained_lazy_imports(path) == [f"{path}:5: import json", f"{path}:10: import io"]


# A module a newcomer can read in one sitting does one job. One over this many lines either splits or
# says, in its docstring, why its job is one ("Why one module: ...").
LONG_MODULE_LINES = 600
ONE_JOB_MARK = "Why one module:"


def test_a_long_module_says_why_it_is_one_job():
    long_ones = []
    for module, path in sorted(_modules().items()):
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > LONG_MODULE_LINES and ONE_JOB_MARK not in (ast.get_docstring(ast.parse(source)) or ""):
            long_ones.append(f"{module}: {lines} lines")
    assert not long_ones, (f"modules over {LONG_MODULE_LINES} lines whose docstring does not say"
                           f" '{ONE_JOB_MARK} ...' (split them, or say why):\n" + "\n".join(long_ones))
