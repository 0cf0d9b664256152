"""A search run in a real Jupyter kernel (nbclient, ipykernel) draws its live table in the cell and shows itself
(issue 37 item 2).

Ray Tune, in a notebook, draws a status display of its own that first clears the cell's output: the search
passes it a reporter that draws nothing, so the cell keeps showwork's table, redrawn in place, ending in the
final counts; the plain line per trial a pipe gets is not printed as well, and the cell's value shows the
search's summary with its tuning curve. A search interrupted in the kernel leaves no thread drawing.
"""

from __future__ import annotations

import textwrap

import pytest

from helpers import search_environment

nbclient = pytest.importorskip("nbclient")  # the test extras install it with ipykernel (pyproject.toml)
nbformat = pytest.importorskip("nbformat")

pytestmark = [pytest.mark.slow]

SPACE = """\
    name: demo
    family: family.py:train
    metric: {name: val_accuracy, mode: max}
    num_trials: 4
    seed: 3
    space:
      x: {distribution: uniform, low: 0.0, high: 1.0}
"""


FAMILY = """\
    import time


    def train(config, *, seed, device, reporter, data):
        return {"val_accuracy": config["x"]}


    def slow(config, *, seed, device, reporter, data):
        time.sleep(120)
        return {"val_accuracy": config["x"]}
"""
INTERRUPT_AFTER_S = 15  # the kernel is interrupted (as by Jupyter's stop button) while the slow search runs
CELLS = (
    "import showwork\ns = showwork.search('demo.yaml', storage='runs', num_cpus=1)\ns",
    "showwork.search('demo.yaml', name='slow', storage='runs', num_cpus=1)",  # family swapped in below
    "import threading, time\ntime.sleep(1)\nprint(sorted(t.name for t in threading.enumerate() if t.name.startswith('showwork')))",
)


def test_a_search_in_a_jupyter_cell_draws_its_table_there_and_ends_in_its_summary(tmp_path):
    (tmp_path / "family.py").write_text(textwrap.dedent(FAMILY))
    (tmp_path / "demo.yaml").write_text(textwrap.dedent(SPACE))
    (tmp_path / "slow.yaml").write_text(textwrap.dedent(SPACE).replace("demo", "slow").replace(":train", ":slow"))
    cells = [nbformat.v4.new_code_cell(source) for source in (CELLS[0], CELLS[1].replace("demo.yaml", "slow.yaml"), CELLS[2])]
    cells[1].metadata["tags"] = ["interrupted"]
    notebook = nbformat.v4.new_notebook(cells=cells)
    with search_environment(tmp_path):
        nbclient.NotebookClient(notebook, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                                timeout_func=lambda cell: INTERRUPT_AFTER_S if "interrupted" in cell.metadata.get("tags", ())
                                else 300, interrupt_on_timeout=True, allow_errors=True).execute()
    outputs = notebook.cells[0].outputs
    displays = [o for o in outputs if o.output_type == "display_data"]
    # The start-up line ("starting Ray…"), gone when the trials start, then the table, each updated in place.
    assert [o.data["text/plain"] == "" for o in displays] == [True, False], [o.data.get("text/plain") for o in displays]
    table = displays[1].data["text/plain"]
    assert "demo: 4 finished, 0 failed, 0 timed out, 0 running, 0 left of 4" in table, table
    assert "<pre" in displays[1].data["text/html"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "trial 0:" not in printed  # not the plain lines as well
    # Ray's notice that ipywidgets is missing (for Ray's own notebook reprs, which a search never shows) was
    # printed on stderr in each search's cell.
    errors = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stderr")
    assert "Missing packages" not in errors, errors
    shown = next(o for o in outputs if o.output_type == "execute_result").data
    assert shown["text/plain"].startswith("Search('demo', storage='runs'): 4 finished, 0 failed of 4 trials")
    assert '<img src="data:image/png;base64,' in shown["text/html"]

    # Interrupted in the kernel: the cell ends in the KeyboardInterrupt that says how to continue, its table stays
    # drawn in its last state, and no thread of showwork keeps drawing (the next cell finds none).
    interrupted = notebook.cells[1].outputs
    error = next(o for o in interrupted if o.output_type == "error")
    assert error.ename == "SearchInterruptedError" and "resume()" in error.evalue
    assert [o for o in interrupted if o.output_type == "display_data"][1].data["text/plain"].count("slow:") == 1
    assert [o.text for o in notebook.cells[2].outputs if o.output_type == "stream"] == ["[]\n"]
