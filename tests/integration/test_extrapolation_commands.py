"""Issue 38 item 3: the extrapolated tuning curve in `curve`, `report`, `compare` and `plan`.

On 48 real scores (a seeded subsample of the released DeBERTaV3 search, matched accuracy): the JSON
keys and arrays, every extrapolated number labelled model-based in text and JSON, the pre-registered
tail rule stated, a refusal (exit 0, its reason), a bad K (one line, exit 2), the report's figure in
every format, its table and sentences, and a hostile family name escaped in each of them.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import numpy as np
import pytest

from helpers import cli_in_process, load_column

pytestmark = pytest.mark.integration

N = 48
K = 480  # 10 × n
HOSTILE = "<b>v3</b> & $x_1$ #1"  # HTML, Markdown and LaTeX specials in one family name


def _write(path: Path, scores: np.ndarray) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["trial", "acc"])
        writer.writerows([i, repr(float(s))] for i, s in enumerate(scores))
    return path


@pytest.fixture(scope="module")
def v3_scores(search_results_dir) -> np.ndarray:
    scores = load_column(search_results_dir / "deberta-v3-base_mnli_tuning.csv", "matched_acc_best")
    return np.random.default_rng(38).choice(scores, size=N, replace=False)


@pytest.fixture
def v3(tmp_path, v3_scores) -> Path:
    return _write(tmp_path / "v3.csv", v3_scores)


@pytest.fixture
def v1(tmp_path, search_results_dir) -> Path:
    scores = load_column(search_results_dir / "deberta-base_mnli_tuning.csv", "matched_acc_best")
    return _write(tmp_path / "v1.csv", np.random.default_rng(38).choice(scores, size=N, replace=False))


def _refused(tmp_path: Path) -> Path:
    """Scores whose best half is one value repeated (a top atom): no noisy-quadratic law fits that tail."""
    rng = np.random.default_rng(0)
    return _write(tmp_path / "atom.csv", np.concatenate([rng.uniform(0.5, 0.8, N // 2), np.full(N // 2, 0.9)]))


def test_curve_json_gains_the_extrapolation_with_its_arrays_and_estimates(v3):
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K, "--json")
    assert code == 0, err
    data = json.loads(out)
    e = data["extrapolation"]
    assert e["k"] == list(range(1, K + 1))
    for key in ("median", "lower", "upper", "source"):
        assert len(e[key]) == K, key
    assert all(lo <= hi for lo, hi in zip(e["lower"], e["upper"]) if lo is not None and hi is not None)
    # nonparametric up to the informative budget, model-based past it: every extrapolated budget says so
    sources = e["source"]
    assert set(sources) == {"nonparametric", "model-based"}
    assert sources == sorted(sources, key=lambda s: s == "model-based")
    assert all((s == "model-based") == (k > e["informative_k"]) for k, s in zip(e["k"], sources))
    assert set(e["estimates"]) == {"asymptote", "gamma", "sigma"}
    for estimate in e["estimates"].values():
        assert estimate["lower"] <= estimate["estimate"] <= estimate["upper"]
    assert e["tail_fraction"] == 0.5 and e["n"] == N and e["n_tail"] == N // 2
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--json")  # without the option: no key
    assert code == 0 and "extrapolation" not in json.loads(out)


def test_curve_text_labels_every_extrapolated_number_and_states_the_rule(v3):
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K)
    assert code == 0, err
    part = out[out.index("extrapolated median tuning curve to k = 480"):]
    assert "With 10× the trials (k = 480) the median best would reach at most" in part
    assert "model-based: holds if the tail is noisy-quadratic" in part
    assert "the best 50% of the trials (24 of 48)" in part and "pre-registered" in part
    assert "Seed noise σ ≈" in part and "margins under 2σ" in part
    assert "asymptote" in part and "γ" in part
    rows = [line.split() for line in part.splitlines() if line.strip().split(" ")[0].isdigit()]
    assert [row[0] for row in rows] == ["1", "2", "5", "10", "20", "50", "100", "200", "480"]
    assert rows[-1][-1] == "model-based" and rows[0][-1] == "nonparametric"
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K, "--tail-fraction", "0.25", "--json")
    e = json.loads(out)["extrapolation"]
    assert code == 0 and e["tail_fraction"] == 0.25 and e["n_tail"] == N // 4  # the rule given is the rule recorded


def test_curve_text_shows_the_mean_band_given_bounds(v3):
    """With --a and --b the text table has the mean curve too, as the JSON does (it was in the JSON only)."""
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K, "--a", "0", "--b", "1", "--json")
    assert code == 0, err
    e = json.loads(out)["extrapolation"]
    code, out, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K, "--a", "0", "--b", "1")
    assert code == 0, err
    part = out[out.index("extrapolated median tuning curve to k = 480"):]
    header = next(line.split() for line in part.splitlines() if line.split()[:1] == ["k"])
    assert header == ["k", "median", "(fit)", "lower", "upper", "mean", "(fit)", "mean", "lower", "mean", "upper", "source"]
    rows = {row[0]: row for row in (line.split() for line in part.splitlines()) if row and row[0].isdigit()}
    assert [float(x) for x in rows["480"][4:7]] == pytest.approx([e["mean_point"][-1], e["mean_lower"][-1], e["mean_upper"][-1]],
                                                                 abs=5e-6)
    assert "the mean band is conservative" in part


def test_a_loss_is_extrapolated_downwards_and_worded_so(tmp_path, v3_scores):
    errors = _write(tmp_path / "errors.csv", 1.0 - v3_scores)  # the same trials as error rates: lower is better
    code, out, err = cli_in_process("curve", errors, "--score", "acc", "--min", "--extrapolate", K)
    assert code == 0, err
    assert "the median best would get down to no lower than" in out and "would reach at most" not in out
    code, out, err = cli_in_process("curve", errors, "--score", "acc", "--min", "--extrapolate", K, "--json")
    e = json.loads(out)["extrapolation"]
    assert e["minimize"] is True and e["median"][-1] <= e["median"][0]  # the curve falls as k grows


def test_a_refusal_is_an_answer_not_an_error(tmp_path):
    atom = _refused(tmp_path)
    code, out, err = cli_in_process("curve", atom, "--score", "acc", "--extrapolate", K, "--json")
    assert code == 0, err
    refused = json.loads(out)["extrapolation"]
    assert refused == {"refused": refused["refused"], "tail_fraction": 0.5} and refused["refused"]
    code, out, err = cli_in_process("curve", atom, "--score", "acc", "--extrapolate", K)
    assert code == 0 and err == ""
    assert f"no extrapolation: {refused['refused'].rstrip('.')}" in out and "the best 50% of the trials" in out


@pytest.mark.parametrize("options, message", [
    (("--extrapolate", "48"), "--extrapolate 48: K must be above the budgets shown (up to k = 48)"),
    (("--extrapolate", "20", "--k", "1..10"), None),  # above the budgets shown: accepted
    (("--extrapolate", "4.5"), "--extrapolate must be an integer, not '4.5'"),
    (("--extrapolate", "1"), "--extrapolate must be at least 2"),
    (("--extrapolate", "1000000000"), "--extrapolate must be at most 100,000"),  # arrays of every budget: 7 GiB
    (("--extrapolate", "1" + "0" * 20), "--extrapolate must be at most 100,000"),  # was a traceback
    (("--tail-fraction", "0.3"), "--tail-fraction applies to --extrapolate K"),
    (("--extrapolate", "480", "--tail-fraction", "1"), "--tail-fraction must be strictly between 0 and 1"),
], ids=["not-above-n", "above-the-budgets-shown", "not-whole", "below-2", "huge", "huger", "fraction-alone", "fraction-1"])
def test_a_bad_k_is_one_line_and_exit_2(v3, options, message):
    code, out, err = cli_in_process("curve", v3, "--score", "acc", *options, "--json")
    if message is None:
        assert code == 0, err
        assert json.loads(out)["extrapolation"]["k"][-1] == 20
        return
    assert code == 2 and out == ""
    assert err.startswith("showwork: error: ") and err.count("\n") == 1 and message in err, err


def test_the_report_draws_tables_and_words_the_extrapolation_with_a_hostile_name_escaped(tmp_path, v3):
    out = tmp_path / "report"
    code, stdout, err = cli_in_process("report", v3, _refused(tmp_path), "--score", "acc", "--label", HOSTILE,
                                       "--label", "atom", "--extrapolate", K, "--formats", "png,svg,pdf",
                                       "--out", out, "--no-mlflow")
    assert code == 0, err
    assert {p.name for p in (out / "figures").glob("extrapolation*")} == {"extrapolation_1.png", "extrapolation_1.svg",
                                                                             "extrapolation_1.pdf"}
    svg = (out / "figures" / "extrapolation_1.svg").read_text()
    assert 'id="model-based-band:' in svg and 'id="asymptote:' in svg and 'id="observed-band:' in svg
    assert "&lt;b&gt;v3&lt;/b&gt;" in svg  # the name as text in the SVG, not markup
    assert 'id="observed-band:atom"' not in svg and 'id="asymptote:atom"' not in svg  # a refused family is not drawn
    data = json.loads((out / "report.json").read_text())
    by_name = {f["name"]: f["extrapolation"] for f in data["families"]}
    assert by_name[HOSTILE]["k"][-1] == K and by_name[HOSTILE]["source"][-1] == "model-based"
    assert list(by_name["atom"]) == ["refused", "tail_fraction"]
    code, printed, err = cli_in_process("curve", v3, "--score", "acc", "--extrapolate", K, "--json")
    assert code == 0 and by_name[HOSTILE] == json.loads(printed)["extrapolation"]  # the object `curve --json` prints
    assert data["settings"]["extrapolate"] == K and data["settings"]["tail_fraction"] is None
    markdown = (out / "report.md").read_text()
    assert "### Extrapolated tuning curves" in markdown and "figures/extrapolation_1.png" in markdown
    assert "With 10× the trials (k = 480) the median best would reach at most" in markdown
    assert "Seed noise σ ≈" in markdown and "margins under 2σ" in markdown
    assert "atom: No extrapolation: " in markdown  # the refused family's reason, in its paragraph
    assert r"\<b\>v3\</b\> \& \$x\_1\$ \#1" in markdown and "<b>v3</b>" not in markdown
    page = (out / "report.html").read_text()
    assert html.escape(HOSTILE, quote=False) in page and "<b>v3</b>" not in page
    assert 'id="extrapolation"' in page and "model-based" in page
    latex = (out / "latex" / "extrapolation.tex").read_text()
    assert r"\textless{}b\textgreater{}v3" in latex and "model-based" in latex
    assert "model-based" in stdout and "atom" in stdout  # the command's summary says it too


def test_compare_labels_the_evidence_past_the_informative_budget_model_based(v1, v3):
    code, out, err = cli_in_process("compare", v1, v3, "--score", "acc", "--extrapolate", K, "--json")
    assert code == 0, err
    e = json.loads(out)["extrapolation"]
    assert e["K"] == K and e["source"] == "model-based" and set(e["curves"]) == {str(v1), str(v3)}
    [pair] = e["pairs"]
    assert pair["source"] == "model-based" and pair["k"][0] > pair["informative_k"] and pair["k"][-1] == K
    assert len(pair["levels"]) == len(pair["k"]) == len(pair["favoured"])
    assert pair["ranges"] and all(r["source"] == "model-based" and r["resolved"] is False for r in pair["ranges"])
    assert pair["ranges"][-1]["k_end"] == K
    code, out, err = cli_in_process("compare", v1, v3, "--score", "acc", "--extrapolate", K)
    assert code == 0, err
    past = out[out.index("extrapolated to K = 480"):]
    assert "never resolved" in past
    assert all(line.endswith("(model-based)") for line in past.splitlines() if line.startswith("  k = "))
    code, out, err = cli_in_process("compare", v1, v3, "--score", "acc", "--extrapolate", K, "--statistic", "mean",
                                    "--a", "0", "--b", "1")
    assert code == 2 and "leave out --statistic mean" in err


def test_plan_gives_the_trials_to_come_within_eps_of_the_asymptote(v3):
    code, out, err = cli_in_process("plan", "--within", "0.002", "--scores", v3, "--score", "acc", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["source"] == "model-based" and data["within"] == 0.002
    within = data["trials_within"]
    assert set(within) == {"by_fit", "every_consonant_law"}
    by_fit, every = within["by_fit"], within["every_consonant_law"]
    assert by_fit is None or by_fit >= 1
    assert every is None or (by_fit is not None and every >= by_fit)  # every consonant law: at least the fit's
    code, out, err = cli_in_process("plan", "--within", "0.002", "--scores", v3, "--score", "acc")
    assert code == 0 and "model-based" in out and "the best 50% of the trials (24 of 48)" in out
    code, out, err = cli_in_process("plan", "--within", "0.002", "--score", "acc")
    assert code == 2 and "--within EPS and --scores SOURCE go together" in err
    code, out, err = cli_in_process("plan", "--within", "0.002", "--scores", v3, "--score", "acc", "--k", "5")
    assert code == 2 and "--within plans from one search's scores: it takes no --k" in err
