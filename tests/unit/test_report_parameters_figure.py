"""The figure of scores against each hyperparameter (issue 26 item 4), read from its matplotlib objects."""

from __future__ import annotations

import math

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.report import FamilyResults, ReportSettings, analyze
from showwork.report.figures import (
    PARAMETERS_PER_PAGE,
    ParameterAxis,
    parameter_axes,
    parameter_pages,
    scores_by_parameter_figure,
)
from showwork.report.figures.parameters import FAILED_LABEL, FAILED_MARKER_Y
from showwork.sampling import trial_plans
from showwork.space import SearchSpace

SPACE = {
    "optimizer.lr": {"distribution": "loguniform", "low": 1e-5, "high": 1e-1},
    "layers": {"distribution": "int_uniform", "low": 1, "high": 4},
    "act": {"distribution": "categorical", "choices": ["relu", "gelu", "tanh"]},
    "epochs": 3,  # a constant: no panel
    "width": {"distribution": "categorical", "choices": [64, 128], "when": {"act": "relu"}},
}
N = 40
FAILED = (3, 17)
TIMED_OUT = (25,)


def family(name="mlp", space=SPACE, seed=0, params=None) -> FamilyResults:
    """N trials drawn from ``space`` as a showwork search draws them; a score from lr; three that did not finish."""
    if params is None:
        params = [config for config, _ in trial_plans(SearchSpace.from_dict(space), seed, range(N))]
    scores = np.array([0.9 - 0.05 * abs(math.log10(p.get("optimizer.lr", 1e-3)) + 3) for p in params])
    statuses = tuple("failed" if i in FAILED else "timeout" if i in TIMED_OUT else "finished" for i in range(len(params)))
    scores[[i for i, s in enumerate(statuses) if s != "finished"]] = np.nan
    return FamilyResults(name, scores, statuses, "val_acc", params=tuple(params),
                         spec={"space": space} if space is not None else None)


@pytest.fixture(scope="module")
def report():
    return analyze([family()], ReportSettings(a=0, b=1))


def panels(figure):
    return {ax.get_xlabel().split(" (")[0]: ax for ax in figure.axes if ax.get_visible()}


def test_one_panel_per_parameter_of_the_space_constants_left_out(report):
    assert [a.name for a in parameter_axes(report)] == ["optimizer.lr", "layers", "act", "width"]
    figure = scores_by_parameter_figure(report)
    assert list(panels(figure)) == ["optimizer.lr", "layers", "act", "width"]
    assert figure.get_suptitle() == "Validation score against each hyperparameter"


def test_log_axis_for_log_scale_distributions_only(report):
    axes = panels(scores_by_parameter_figure(report))
    assert axes["optimizer.lr"].get_xscale() == "log"
    assert axes["layers"].get_xscale() == "linear"
    # The ticks are plain text (no mathtext: texts are drawn as typed).
    labels = [t.get_text() for t in axes["optimizer.lr"].get_xticklabels() if t.get_text()]
    assert labels and not any("$" in label for label in labels)


def test_every_finished_trial_is_a_point_at_its_value_and_score(report):
    f = report.families[0].results
    figure = scores_by_parameter_figure(report)
    points = figure.findobj(lambda a: a.get_gid() == "scores:optimizer.lr:mlp")[0].get_offsets()
    finished = [i for i, s in enumerate(f.statuses) if s == "finished"]
    np.testing.assert_allclose(points[:, 0], [f.params[i]["optimizer.lr"] for i in finished])
    np.testing.assert_allclose(points[:, 1], f.scores[finished])


def test_categorical_values_are_jittered_strips_with_their_labels_the_same_each_time(report):
    f = report.families[0].results
    figure = scores_by_parameter_figure(report)
    ax = panels(figure)["act"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["relu", "gelu", "tanh"]
    x = figure.findobj(lambda a: a.get_gid() == "scores:act:mlp")[0].get_offsets()[:, 0]
    slots = [["relu", "gelu", "tanh"].index(f.params[i]["act"]) for i, s in enumerate(f.statuses) if s == "finished"]
    assert np.all(np.abs(x - slots) <= 0.18) and np.ptp(x - slots) > 0  # within the strip, spread sideways
    again = scores_by_parameter_figure(report).findobj(lambda a: a.get_gid() == "scores:act:mlp")[0].get_offsets()
    np.testing.assert_array_equal(again[:, 0], x)


def test_failed_and_timed_out_trials_are_marked_on_the_bottom_edge_in_the_legend(report):
    figure = scores_by_parameter_figure(report)
    failed = figure.findobj(lambda a: a.get_gid() == "failed:layers:mlp")[0]
    f = report.families[0].results
    np.testing.assert_allclose(failed.get_offsets()[:, 0], [f.params[i]["layers"] for i in sorted(FAILED + TIMED_OUT)])
    np.testing.assert_allclose(failed.get_offsets()[:, 1], FAILED_MARKER_Y)  # axes fraction: the bottom edge
    ax = panels(figure)["layers"]
    shown_y = failed.get_offset_transform().transform(failed.get_offsets())[:, 1]
    np.testing.assert_allclose(shown_y, ax.transAxes.transform((0, FAILED_MARKER_Y))[1])  # whatever the y limits
    assert FAILED_LABEL in [t.get_text() for t in figure.legends[0].get_texts()]


def test_a_conditional_parameter_counts_the_trials_that_drew_it(report):
    f = report.families[0].results
    drew = sum(1 for p in f.params if "width" in p)
    assert 0 < drew < N
    assert panels(scores_by_parameter_figure(report))["width"].get_xlabel() == f"width ({drew} of {N} trials)"


def test_each_family_its_colour_and_its_legend_entry():
    report = analyze([family("a"), family("b", seed=1)], ReportSettings(a=0, b=1))
    figure = scores_by_parameter_figure(report)
    a = figure.findobj(lambda x: x.get_gid() == "scores:act:a")[0].get_facecolor()[0]
    b = figure.findobj(lambda x: x.get_gid() == "scores:act:b")[0].get_facecolor()[0]
    assert tuple(a[:3]) != tuple(b[:3])
    assert [t.get_text() for t in figure.legends[0].get_texts()][:2] == [f"a (n = {N})", f"b (n = {N})"]


def test_without_a_space_numbers_categories_and_log_scales_are_inferred():
    rng = np.random.default_rng(3)
    params = [{"lr": float(10 ** rng.uniform(-5, -1)), "dropout": float(rng.uniform(0, 0.5)) if i else 0.0002,
               "opt": ["adam", "sgd"][i % 2], "batch": 32} for i in range(N)]
    report = analyze([family(space=None, params=params)], ReportSettings(a=0, b=1))
    assert parameter_axes(report) == [ParameterAxis("lr", "log"), ParameterAxis("dropout", "linear"),
                                      ParameterAxis("opt", "categorical", ("adam", "sgd"))]  # batch: one value, a constant


def test_many_parameters_go_on_pages():
    space = {f"p{i:02d}": {"distribution": "uniform", "low": 0, "high": 1} for i in range(PARAMETERS_PER_PAGE + 2)}
    report = analyze([family(space=space)], ReportSettings(a=0, b=1))
    pages = parameter_pages(report)
    assert [len(p) for p in pages] == [PARAMETERS_PER_PAGE, 2]
    figure = scores_by_parameter_figure(report, pages[1], 2, 2)
    assert list(panels(figure)) == ["p12", "p13"] and figure.get_suptitle().endswith("(2 of 2)")


def test_no_recorded_parameter_is_no_figure_and_an_error_if_asked():
    report = analyze([family(space=None, params=[{}] * N)], ReportSettings(a=0, b=1))
    assert parameter_pages(report) == []
    with pytest.raises(InputError, match="--params"):
        scores_by_parameter_figure(report)
