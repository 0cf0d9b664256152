"""A search run in a real Jupyter kernel (nbclient, ipykernel) draws its live table in the cell and shows itself
(issue 37 item 2).

Ray Tune, in a notebook, draws a status display of its own that first clears the cell's output: the search
passes it a reporter that draws nothing, so the cell keeps showwork's table, redrawn in place, ending in the
final counts; the plain line per trial a pipe gets is not printed as well, and the cell's value shows the
search's summary with its tuning curve.
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


def test_a_search_in_a_jupyter_cell_draws_its_table_there_and_ends_in_its_summary(tmp_path):
    (tmp_path / "family.py").write_text("def train(config, *, seed, device, reporter, data):\n"
                                        "    return {'val_accuracy': config['x']}\n")
    (tmp_path / "demo.yaml").write_text(textwrap.dedent(SPACE))
    cell = "import showwork\ns = showwork.search('demo.yaml', storage='runs', num_cpus=1)\ns"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    with search_environment(tmp_path):
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[0].outputs
    displays = [o for o in outputs if o.output_type == "display_data"]
    assert len(displays) == 1, [o.data.get("text/plain") for o in displays]  # one display, updated in place
    table = displays[0].data["text/plain"]
    assert "demo: 4 finished, 0 failed, 0 timed out, 0 running, 0 left of 4" in table, table
    assert "<pre" in displays[0].data["text/html"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "trial 0:" not in printed  # not the plain lines as well
    shown = next(o for o in outputs if o.output_type == "execute_result").data
    assert shown["text/plain"].startswith("Search('demo', storage='runs'): 4 finished, 0 failed of 4 trials")
    assert '<img src="data:image/png;base64,' in shown["text/html"]
