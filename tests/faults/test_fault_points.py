"""The named fault points of showwork/faults.py: each is placed once in showwork, armed by a crash test, and reached.

The driver-kill tests (tests/faults/test_driver_kills.py, slow) stop a search at each point; a point that
were renamed or removed in showwork, or a case that named no point, would leave a moment of the
search untested without any test failing. These fast checks make that fail.
"""

from __future__ import annotations

import ast

import pytest
from test_driver_kills import CASES, REPLAY_CASES

from showwork import faults

from helpers import REPO_ROOT


def placed_points() -> list[str]:
    """The point names at the sites in showwork: ``faults.point("NAME")`` (either name of a conditional
    expression) and ``fault_point="NAME"`` passed on to a write that reaches it."""
    names = []
    for path in sorted((REPO_ROOT / "showwork").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            function = node.func
            arguments = []
            if isinstance(function, ast.Attribute) and function.attr == "point" and getattr(function.value, "id", None) == "faults":
                arguments = node.args
            arguments += [keyword.value for keyword in node.keywords if keyword.arg == "fault_point"]
            for argument in arguments:
                names += [n.value for n in ast.walk(argument) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return names


def test_every_point_is_placed_exactly_once_in_showwork():
    names = placed_points()
    assert sorted(names) == sorted(faults.POINTS)  # none missing, none twice, none undeclared


def test_every_point_is_armed_by_a_driver_kill_case():
    armed = {case.partition("@")[0] for case in [*CASES, *REPLAY_CASES]}
    assert armed == faults.POINTS


def test_an_armed_point_runs_its_action_where_it_is_reached_and_no_other(tmp_path):
    from showwork.store import Ledger

    reached = []
    ledger = Ledger(tmp_path, "s")
    try:
        faults.arm("meta-write", lambda: reached.append(sorted(p.name for p in ledger.root.iterdir())))
        faults.point("trial-ended")  # another point: nothing
        assert reached == []
        ledger.update_meta(seed=1)
    finally:
        faults.disarm()
    # at the point, search.json's temp file is written and not yet renamed
    (files,) = reached
    assert "search.json" not in files and any(name.startswith(".search.json.") for name in files)
    ledger.update_meta(seed=2)  # disarmed: nothing
    assert len(reached) == 1


def test_an_unknown_point_cannot_be_armed():
    with pytest.raises(LookupError, match="no fault point 'parent-create'"):
        faults.arm("parent-create", lambda: None)
