"""Issue 37 item 4: ``examples/notebook.ipynb``, a real notebook, committed with its outputs and executed here.

The committed notebook must hold the outputs of the sources it holds: every code cell ran, in order, and is
stamped with the SHA-256 of the source it ran (``make notebook`` writes them), its outputs hold no path of the
machine that ran it, and the search, the race and the report show themselves as HTML. Executed again in a real
Jupyter kernel (nbclient, ipykernel), every cell runs without an error and shows the same kinds of output as
the committed one (not the same numbers: timings and Ray's log lines differ from run to run), the report's
files exist, and nothing is written into the repository.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

from helpers import REPO_ROOT, search_environment, store_files

spec = importlib.util.spec_from_file_location("notebook_hook", REPO_ROOT / "docs" / "_hooks" / "notebook.py")
notebook_hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(notebook_hook)

# The cells that end in one of showwork's results, by what the cell's last line is: each must show HTML.
SHOWN_AS_HTML = {"search": "Search(", "search.curve()": "SearchCurve(", "search.curve(extrapolate=240)": "SearchCurve(",
                 "race": "Race(", "race.summary()": "",
                 'search.report("report", others=(race.searches[1],))': "ReportFiles("}


def committed() -> dict:
    return json.loads(notebook_hook.NOTEBOOK.read_text(encoding="utf-8"))


def code_cells(notebook) -> list:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def last_line(cell) -> str:
    return notebook_hook.joined_text(cell["source"]).strip().splitlines()[-1]


def output_kinds(cell) -> list[tuple[str, ...]]:
    """What a cell shows, without its numbers: each output's type and MIME types (stdout's lines as one stream;
    stderr, which holds Ray's log lines, aside)."""
    kinds = []
    for output in cell["outputs"]:
        if output["output_type"] == "stream":
            kind = ("stream", output["name"])
        else:
            kind = (output["output_type"], *sorted(output.get("data", {})))
        if kind != ("stream", "stderr") and kind not in kinds[-1:]:
            kinds.append(kind)
    return kinds


def test_the_committed_notebook_holds_the_outputs_of_its_own_sources():
    cells = code_cells(committed())
    assert len(cells) >= 6
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1)), "run every cell in order: make notebook"
    stale = [notebook_hook.joined_text(cell["source"])[:60] for cell in cells
             if cell["metadata"].get("showwork", {}).get(notebook_hook.STAMP) != notebook_hook.source_sha256(cell)]
    assert not stale, f"cells changed since their outputs were made (make notebook): {stale}"
    assert not [cell for cell in cells if cell["outputs"] and any(o["output_type"] == "error" for o in cell["outputs"])]
    shown = {last_line(cell): cell for cell in cells if last_line(cell) in SHOWN_AS_HTML}
    assert set(shown) == set(SHOWN_AS_HTML), sorted(shown)
    for line, cell in shown.items():
        (result,) = [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
        assert notebook_hook.joined_text(result["data"]["text/plain"]).startswith(SHOWN_AS_HTML[line]), line
        assert "<table" in notebook_hook.joined_text(result["data"]["text/html"]), line
    assert '<img src="data:image/png;base64,' in notebook_hook.joined_text(shown["search"]["outputs"][-1]["data"]["text/html"])


def test_the_committed_outputs_name_no_path_of_the_machine_that_ran_them():
    outputs = json.dumps([cell["outputs"] for cell in code_cells(committed())])
    for path in {str(REPO_ROOT), str(REPO_ROOT.parent), sys.prefix, os.path.expanduser("~"), "/tmp/", "/home/", "/work/"}:
        assert path not in outputs, path
    assert "Missing packages" not in outputs  # Ray's ipywidgets notice, twice per search (showwork.api quiets it)


@pytest.mark.slow
@pytest.mark.integration
def test_the_notebook_runs_in_a_jupyter_kernel_and_shows_what_the_committed_one_shows(tmp_path):
    nbformat = pytest.importorskip("nbformat")  # the test extras install nbclient and ipykernel with it
    pytest.importorskip("nbclient")
    examples = notebook_hook.NOTEBOOK.parent
    before = store_files(REPO_ROOT.iterdir()), sorted(examples.iterdir())
    with search_environment(tmp_path), notebook_hook.executed(nbformat.read(notebook_hook.NOTEBOOK, as_version=4)) as (
            notebook, folder):
        assert folder.is_dir() and folder != tmp_path
        report = folder / "report"
        assert {"report.html", "report.md", "report.json"} <= {p.name for p in report.iterdir()}
        assert list(report.rglob("*.png"))
        assert (folder / "runs" / "_races" / "logistic-vs-centroid" / "race.json").is_file()
    assert not folder.exists()  # removed after
    assert (store_files(REPO_ROOT.iterdir()), sorted(examples.iterdir())) == before

    executed = code_cells(json.loads(nbformat.writes(notebook)))
    expected = code_cells(committed())
    assert [c["source"] for c in executed] == [c["source"] for c in expected]
    assert [output_kinds(c) for c in executed] == [output_kinds(c) for c in expected]
    race = next(cell for cell in executed if last_line(cell) == "race")
    printed = "".join(notebook_hook.joined_text(o["text"]) for o in race["outputs"] if o["output_type"] == "stream" and o["name"] == "stdout")
    assert printed.count("race logistic-vs-centroid:") == 1  # its end, printed once
