"""What the Python API's results show in a notebook (issue 37 item 2): ``_repr_html_`` and ``__repr__``.

On searches written into a ledger (no Ray, no MLflow): the HTML is parsed (html.parser) for its structure, its
figure (a PNG the report's figure code drew) and its escaping of the user's texts; the live progress is drawn into
a Jupyter cell when rich would say this is Jupyter (faked as rich detects it: ``get_ipython`` among the builtins).
"""

from __future__ import annotations

import base64
import builtins
import subprocess
import sys
import textwrap
import threading
import types
from html.parser import HTMLParser
from pathlib import Path

import pytest

import showwork
from showwork.report import ReportSettings, analyze, from_ledger
from showwork.report.contents import PairAnalysis
from showwork.report.figures import DPI
from showwork.report.render import html_table
from showwork.report.tables import best_configuration_table, comparison_table, family_table, tuning_curve_table
from showwork.run.progress import CELL_WIDTH, Progress, StartupLine, in_jupyter
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import REPO_ROOT, trial_record, write_search

HOSTILE_VALUE = "<img src=x onerror=alert(1)>"
HOSTILE_METRIC = '<b onmouseover="alert(2)">acc</b>'
HOSTILE_LABEL = "<script>alert(3)</script>"
# What the HTML may hold: tables, paragraphs, a list, an image, a link; never a script or an event handler.
ALLOWED_TAGS = {"div", "p", "strong", "em", "section", "h3", "table", "thead", "tbody", "tr", "th", "td", "img", "ul", "li",
                "a"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Parsed(HTMLParser):
    """The start tags (with their attributes) and the text of a piece of HTML."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.texts).split())

    def named(self, tag: str) -> list[dict]:
        return [attrs for name, attrs in self.tags if name == tag]

    def pngs(self) -> list[bytes]:
        prefix = "data:image/png;base64,"
        return [base64.b64decode(img["src"][len(prefix):]) for img in self.named("img") if img["src"].startswith(prefix)]


def png_size(png: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels (its IHDR chunk)."""
    assert png.startswith(PNG_MAGIC)
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def safe(parsed: Parsed) -> None:
    """Only the tags the reprs write, no event handler, no script."""
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert not [name for _, attrs in parsed.tags for name in attrs if name.lower().startswith("on")]


def write(folder: Path, name: str, scores: list, *, statuses: dict | None = None, metric: str = "val_accuracy",
          choices: tuple[str, ...] = ("adam", "sgd"), num_trials: int | None = None) -> Path:
    """A search with ``scores`` recorded (of ``num_trials``, default as many) in ``folder/runs`` as ``showwork search``
    leaves it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "family.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {}\n")
    quoted = ", ".join("'" + c.replace("'", "''") + "'" for c in choices)
    (folder / f"{name}.yaml").write_text(textwrap.dedent(f"""\
        name: {name}
        family: family.py:train
        metric: {{name: '{metric}', mode: max, bounds: [0, 1]}}
        num_trials: {num_trials or len(scores)}
        seed: 3
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
          opt: {{distribution: categorical, choices: [{quoted}]}}
        """))
    spec = load_search_spec(folder / f"{name}.yaml")
    statuses = statuses or {}
    records = [trial_record(i, score=score, test_score=score, status=statuses.get(i, "finished"),
                            error="boom" if i in statuses else None) for i, score in enumerate(scores)]
    write_search(Ledger(folder / "runs", name), spec, records)
    return folder / "runs"


SCORES = [0.61, 0.72, 0.55, 0.72, None, 0.68, 0.59, 0.70]  # trial 4 failed; trials 1 and 3 tie for the best


@pytest.fixture
def toy(tmp_path, monkeypatch) -> showwork.api.Search:
    monkeypatch.chdir(tmp_path)
    return showwork.open_search("toy", storage=write(tmp_path, "toy", SCORES, statuses={4: "failed"}))


def test_a_search_shows_its_counts_best_configuration_best_trials_and_tuning_curve(toy):
    assert repr(toy) == (f"Search('toy', storage={str(toy.storage)!r}): 7 finished, 1 failed of 8 trials;"
                         " best val_accuracy 0.72 (trial 1)")
    parsed = Parsed(toy._repr_html_())
    safe(parsed)
    assert "7 finished, 1 failed of 8 trials; best val_accuracy 0.72 (trial 1) (higher is better)" in parsed.text
    # The report's own tables of the trials and of the best configuration, then the 5 best trials.
    assert [section["id"] for section in parsed.named("section")] == ["families", "best_configurations", "best_trials"]
    report = analyze([toy.family()])
    shown = toy._repr_html_()
    assert html_table(family_table(report)) in shown and html_table(best_configuration_table(report)) in shown
    assert "The 5 best trials" in parsed.text and len(parsed.named("tr")) == 2 + 3 + 6  # header and rows of each
    pngs = parsed.pngs()
    assert len(pngs) == 1 and png_size(pngs[0]) == (round(6.4 * DPI), round(4.0 * DPI))  # a notebook's size


def test_a_search_of_no_trial_or_of_failed_trials_only_shows_text_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failed = showwork.open_search("bad", storage=write(tmp_path / "a", "bad", [None, None], statuses={0: "failed", 1: "failed"}))
    assert repr(failed).endswith("0 finished, 2 failed of 2 trials; no finished trial with a score")
    parsed = Parsed(failed._repr_html_())
    safe(parsed)
    assert "no tuning curve: no trial finished with a finite score" in parsed.text and not parsed.named("img")
    empty = showwork.open_search("none", storage=write(tmp_path / "b", "none", [], num_trials=4))  # none ended yet
    assert repr(empty).endswith("0 finished, 0 failed of 4 trials; no finished trial with a score")
    parsed = Parsed(empty._repr_html_())
    assert "no finished trial with a score" in parsed.text and not parsed.named("img")
    missing = showwork.api.Search("nothing", tmp_path / "b" / "runs")  # not (yet) a search: said, not raised
    assert repr(missing).startswith("Search('nothing', storage=") and "no search 'nothing'" in repr(missing)
    assert "no search 'nothing'" in Parsed(missing._repr_html_()).text


def test_the_curve_shows_its_budgets_and_bands_and_the_reports_figure(toy):
    curve = toy.curve()
    assert isinstance(curve, showwork.statistics.TuningCurve)
    assert repr(curve) == "SearchCurve('toy': median tuning curve of 8 trials (1 failed, policy worst), k = 1–8, 80% LD-HD bands)"
    parsed = Parsed(curve._repr_html_())
    safe(parsed)
    # The report's table of the curve: at its table budgets, with the bands the curve holds.
    report = analyze([toy.family()], ReportSettings(budgets=tuple(curve.k)))
    assert html_table(tuning_curve_table(report)) in curve._repr_html_()
    assert report.families[0].curve.quantile_curve.tolist() == curve.quantile_curve.tolist()
    assert len(parsed.pngs()) == 1 and parsed.pngs()[0].startswith(PNG_MAGIC)
    # Restricted to some budgets, it shows (and draws) those.
    assert toy.curve(budgets=(1, 2, 3)).at([1, 2])._repr_html_() != curve._repr_html_()


def test_a_curve_loads_matplotlib_only_when_it_is_shown(toy):
    """A script that computes curves does not pay for the figures' module (0.4 s): it loads when a figure is drawn."""
    code = ("import sys, showwork; s = showwork.open_search('toy', storage=sys.argv[1]); c = s.curve(); repr(c);"
            " s.compare(s.family(label='again')); assert 'matplotlib' not in sys.modules, 'loaded without a figure';"
            " c._repr_html_(); assert 'matplotlib' in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(toy.storage)], check=True, cwd=REPO_ROOT)


def test_a_comparison_shows_its_sentences_its_ranges_and_the_comparison_figure(toy, tmp_path):
    other = showwork.open_search("other", storage=write(tmp_path / "b", "other", [0.50, 0.52, 0.49, 0.55, 0.51, 0.53, 0.48, 0.54]))
    pair = toy.compare(other)
    assert isinstance(pair, PairAnalysis)  # still the report's pair, with its comparison and sentences()
    assert repr(pair).splitlines() == ["SearchComparison('toy' vs 'other'):", *(f"  {s}" for s in pair.sentences())]
    parsed = Parsed(pair._repr_html_())
    safe(parsed)
    items = parsed.named("li")
    assert len(items) == len(pair.sentences()) and all(s in parsed.text for s in pair.sentences())
    assert html_table(comparison_table(pair.report)) in pair._repr_html_()  # the report's table of the pair
    assert len(parsed.named("tr")) == 1 + len(pair.comparison.ranges)
    assert len(parsed.pngs()) == 1 and parsed.pngs()[0].startswith(PNG_MAGIC)


def test_a_report_links_its_page_shows_its_main_figure_and_lists_its_files(toy, tmp_path):
    files = toy.report(tmp_path / "javascript:alert(1)", mlflow=False, figure_formats=("png",))
    assert repr(files) == f"ReportFiles({str(files.directory)!r}: report.html, report.md, report.json, 4 figures)"
    parsed = Parsed(files._repr_html_())
    safe(parsed)
    # Relative to the working directory (a notebook's folder), and never a URL's scheme: the folder's ":" is encoded.
    assert parsed.named("a")[0]["href"] == "./javascript%3Aalert%281%29/report.html"
    assert parsed.pngs() == [files.figures["tuning_curves"][0].read_bytes()]
    assert "report.md" in parsed.texts and "figures/tuning_curves.png" in parsed.texts
    outside = toy.report(tmp_path.parent / f"{tmp_path.name}-out", mlflow=False, figure_formats=("png",))
    assert Parsed(outside._repr_html_()).named("a")[0]["href"] == outside.html.resolve().as_uri()


def test_what_a_user_wrote_is_shown_as_text_and_never_acts_as_html(tmp_path, monkeypatch):
    """A hostile metric name, categorical value and family label reach the HTML as text: no tag, no handler."""
    monkeypatch.chdir(tmp_path)
    storage = write(tmp_path, "hostile", [0.6, 0.7, 0.65, 0.5], metric=HOSTILE_METRIC, choices=(HOSTILE_VALUE, HOSTILE_VALUE + "'\""))
    search = showwork.open_search("hostile", storage=storage)
    other = from_ledger(storage, "hostile", label=HOSTILE_LABEL)
    for shown in (search._repr_html_(), search.curve()._repr_html_(), search.compare(other)._repr_html_()):
        parsed = Parsed(shown)
        safe(parsed)
        assert not parsed.named("script") and not parsed.named("b")
    assert HOSTILE_VALUE in Parsed(search._repr_html_()).text and HOSTILE_METRIC in Parsed(search._repr_html_()).text
    assert HOSTILE_LABEL in Parsed(search.compare(other)._repr_html_()).text


# ------------------------------------------------------------------ the live progress in a Jupyter cell


class ZMQInteractiveShell:
    """The class name rich reads from ``get_ipython()`` to say "Jupyter"."""


class DisplayHandle:
    def __init__(self, shown: list) -> None:
        self.shown = shown

    def update(self, bundle, raw=False):
        assert raw
        self.shown.append((threading.current_thread().name, bundle))


@pytest.fixture
def jupyter(monkeypatch) -> list:
    """A Jupyter kernel as rich detects it, and IPython.display's ``display`` recording what the cell shows."""
    shown: list = []

    def display(bundle, raw=False, display_id=False):
        assert raw and display_id
        shown.append((threading.current_thread().name, bundle))
        return DisplayHandle(shown)

    module = types.ModuleType("IPython.display")
    module.display = display
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))
    monkeypatch.setitem(sys.modules, "IPython.display", module)
    monkeypatch.setattr(builtins, "get_ipython", lambda: ZMQInteractiveShell(), raising=False)
    return shown


def test_outside_jupyter_nothing_changes(capsys):
    assert not in_jupyter()
    with Progress("demo", 2, "acc", "max", [], enabled=True) as progress:
        assert not progress.live
        progress.started(0)
        progress.ended(trial_record(0, score=0.5))
    assert capsys.readouterr().out.startswith("trial 0: finished; demo: 1/2 done")


def test_in_jupyter_the_live_table_is_drawn_in_the_cell_and_ends_in_the_final_state(jupyter, capsys):
    assert in_jupyter()
    with Progress("demo<i>", 2, "acc", "max", [], enabled=True, trial_of=lambda i: ({"opt": HOSTILE_VALUE}, 1)) as progress:
        assert progress.live
        progress.started(0)
        progress.ended(trial_record(0, score=0.5))
        progress.started(1)
    assert capsys.readouterr().out == ""  # the cell's table, not the plain lines as well: nothing printed twice
    last = jupyter[-1][1]
    assert last["text/plain"].splitlines()[-2].startswith("demo<i>: 1 finished, 0 failed, 0 timed out, 1 running")
    assert max(len(line) for line in last["text/plain"].splitlines()) <= CELL_WIDTH
    parsed = Parsed(last["text/html"])
    assert not parsed.named("i") and not parsed.named("img") and HOSTILE_VALUE[:11] in parsed.text


def test_after_an_interrupt_in_the_kernel_nothing_keeps_drawing(jupyter):
    with pytest.raises(KeyboardInterrupt):
        with Progress("demo", 4, "acc", "max", [], enabled=True) as progress:
            progress.started(0)
            raise KeyboardInterrupt
    assert not [t for t in threading.enumerate() if t.name == "showwork-cell-progress"]
    drawn = len(jupyter)
    progress.started(1)  # a late hook (Tune's) after the display closed
    progress.ended(trial_record(1, score=0.5))
    threading.Event().wait(0.6)
    assert len(jupyter) == drawn
    assert jupyter[-1][0] == threading.current_thread().name  # the last state drawn once more, by the caller


def test_in_jupyter_the_start_up_line_is_drawn_in_the_cell_and_gone_when_the_trials_start(jupyter):
    with StartupLine("demo") as line:
        line.show("starting Ray")
        threading.Event().wait(0.6)  # its thread redraws it (4 times a second)
    drawn = [bundle["text/plain"] for _, bundle in jupyter]
    assert any(text.startswith("demo: starting Ray…, elapsed 0 s") for text in drawn)
    assert drawn[-1] == "" and not [t for t in threading.enumerate() if t.name == "showwork-cell-progress"]
