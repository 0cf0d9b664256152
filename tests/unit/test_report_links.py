"""The report's links to its runs (issue 34 item 5): showwork.report.links and their markup in showwork.report.render."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import numpy as np
import pytest

from showwork.report.inputs import FamilyResults
from showwork.report.links import family_links, run_links, runs_line, shown_store
from showwork.report.render import Document, Linked, html_document, markdown_document
from showwork.tracking.mlflow_format import runs_table_path
from showwork.tracking.ui import ui_address

RUN = "0123456789abcdef0123456789abcdef"
RUNS_TABLE = "#/experiments/7/runs?orderByKey=metrics.%60best_val_score%60&orderByAsc=false"


def table_filter(url: str) -> tuple[str, dict[str, str]]:
    """The runs table's route (``/experiments/ID/runs``) and its query, decoded, from a link's fragment."""
    route, _, query = urllib.parse.urlsplit(url).fragment.partition("?")
    return route, dict(urllib.parse.parse_qsl(query))


def test_the_runs_table_path_is_the_one_search_and_ui_print_and_filters_to_a_parent_run():
    assert runs_table_path("7") == RUNS_TABLE  # what `showwork search` and `showwork ui` print, unchanged
    route, query = table_filter("http://h/" + runs_table_path("7", "min", parent_run_id=RUN))
    assert route == "/experiments/7/runs"
    assert query == {"orderByKey": "metrics.`best_val_score`", "orderByAsc": "true",
                     "searchFilter": f"tags.`mlflow.parentRunId` = '{RUN}'"}
    _, query = table_filter("http://h/" + runs_table_path("7", metric="val acc/top-1"))  # another program's score
    assert query["orderByKey"] == "metrics.`val acc/top-1`" and "searchFilter" not in query


def test_a_tracking_server_gets_the_url_of_its_runs_table():
    links = run_links("http://mlflow.example.org:5000", "7", RUN)
    assert links.runs_url == f"http://mlflow.example.org:5000/{runs_table_path('7', parent_run_id=RUN)}"
    assert links.url == links.runs_url and links.ui_command is None and links.ui_runs_url is None
    assert links.to_dict() == {"parent_run_id": RUN, "experiment_id": "7", "tracking_uri": "http://mlflow.example.org:5000",
                               "runs_url": links.runs_url, "ui_command": None, "ui_runs_url": None}
    assert links.text() == f"MLflow parent run {RUN}, experiment 7 at http://mlflow.example.org:5000; its runs table, best first:"


def test_https_with_a_path_prefix_keeps_the_prefix():
    """A server behind a proxy (``mlflow server --static-prefix``) serves its UI where its API is."""
    links = run_links("https://example.org/team/mlflow/", "7", RUN, mode="min")
    assert links.runs_url.startswith("https://example.org/team/mlflow/#/experiments/7/runs?")
    assert table_filter(links.runs_url)[1]["orderByAsc"] == "true"  # lower is better: ascending


@pytest.mark.parametrize("uri", ["http://user:secret@host:5000", "https://user:secret@host/mlflow?token=secret",
                                 "postgresql://user:secret@db:5432/mlflow"])
def test_credentials_never_reach_the_links(uri):
    links = run_links(uri, "7", RUN)
    shown = json.dumps(links.to_dict()) + links.text()
    assert "secret" not in shown and "user" not in shown, shown
    assert links.url is not None


def test_a_sqlite_store_is_named_by_its_file_and_served_by_showwork_ui():
    links = run_links("sqlite:////home/me/project/mlflow.db", "7", RUN)
    assert links.tracking_uri == "sqlite:///mlflow.db" and links.runs_url is None
    assert links.ui_command == "showwork ui --tracking-uri sqlite:///mlflow.db"
    assert links.ui_runs_url == f"{ui_address()}/{runs_table_path('7', parent_run_id=RUN)}"
    assert links.ui_runs_url.startswith("http://127.0.0.1:5000/#/experiments/7/runs?")  # `showwork ui`'s default address
    assert links.url == links.ui_runs_url
    assert links.text() == (f"MLflow parent run {RUN}, experiment 7 in sqlite:///mlflow.db; serve it with showwork ui"
                            " --tracking-uri sqlite:///mlflow.db (in the folder that holds mlflow.db), then its runs table:")
    assert "/home" not in json.dumps(links.to_dict()) + links.text()


@pytest.mark.parametrize("uri", ["file:///home/me/project/mlruns", "/home/me/project/mlruns/", "mlruns"])
def test_a_file_store_is_named_by_its_folder(uri):
    links = run_links(uri, "7", RUN)
    assert links.tracking_uri == "./mlruns" and links.ui_command == "showwork ui --tracking-uri ./mlruns"
    assert "/home" not in json.dumps(links.to_dict()) + links.text()


def test_without_a_run_id_or_an_experiment_id():
    experiment_only = run_links("http://host:5000", "7", None)  # another program's top-level runs
    assert experiment_only.parent_run_id is None and "searchFilter" not in table_filter(experiment_only.runs_url)[1]
    assert experiment_only.text() == "MLflow experiment 7 at http://host:5000; its runs table, best first:"
    old_ledger = run_links("sqlite:////home/me/mlflow.db", None, RUN)  # a search begun before the ledger kept it
    assert old_ledger.url is None and old_ledger.ui_command == "showwork ui --tracking-uri sqlite:///mlflow.db"
    assert old_ledger.text() == (f"MLflow parent run {RUN} in sqlite:///mlflow.db; showwork ui --tracking-uri"
                                 " sqlite:///mlflow.db (in the folder that holds mlflow.db) lists each search's runs table.")
    assert run_links("http://host:5000", None, RUN).text() == f"MLflow parent run {RUN} at http://host:5000."


def test_stores_showwork_ui_cannot_serve_get_the_run_id_alone():
    for uri in ("databricks", "databricks://profile", "sqlite:///:memory:"):
        links = run_links(uri, "7", RUN)
        assert (links.url, links.ui_command, links.parent_run_id) == (None, None, RUN), uri
    assert shown_store("databricks://profile") == "databricks://profile"


def family(meta: dict, minimize: bool = False) -> FamilyResults:
    return FamilyResults(name="f", scores=np.array([0.1, 0.2]), statuses=("finished", "finished"), metric="acc",
                         minimize=minimize, meta=meta)


def test_family_links_come_from_what_the_reader_recorded():
    assert family_links(family({})) is None  # a results file, a Ray Tune experiment, an Optuna study
    links = family_links(family({"tracking_uri": "http://h:5000", "experiment_id": "7", "parent_run_id": RUN,
                                 "score_key": "val_loss"}, minimize=True))
    assert table_filter(links.runs_url)[1] | {"searchFilter": ""} == {
        "orderByKey": "metrics.`val_loss`", "orderByAsc": "true", "searchFilter": ""}
    ledger = family_links(family({"tracking_uri": "sqlite:////x/mlflow.db", "parent_run_id": RUN}))  # before issue 34
    assert ledger.parent_run_id == RUN and ledger.experiment_id is None and ledger.url is None


def test_the_runs_line_of_the_sources():
    assert runs_line("f", family({})) is None
    served = runs_line("f", family({"tracking_uri": "http://h:5000", "experiment_id": "7", "parent_run_id": RUN}))
    assert served == Linked(f"f runs: MLflow parent run {RUN}, experiment 7 at http://h:5000; its runs table, best first:",
                            f"http://h:5000/{runs_table_path('7', parent_run_id=RUN)}")
    old_ledger = runs_line("f", family({"tracking_uri": "sqlite:////x/mlflow.db", "parent_run_id": RUN}))
    assert isinstance(old_ledger, str) and old_ledger.startswith(f"f runs: MLflow parent run {RUN} in sqlite:///mlflow.db;")


def test_a_linked_source_line_is_a_link_in_markdown_and_html(tmp_path: Path):
    url = "http://h:5000/" + runs_table_path("7", parent_run_id=RUN)
    doc = Document("t", (), (), (), ("a: ledger <b>", Linked("a runs: parent run *x*; its runs table:", url)))
    markdown = markdown_document(doc, tmp_path)
    assert f"- a runs: parent run \\*x\\*; its runs table: <{url}>\n" in markdown  # an autolink; the text escaped
    assert "- a: ledger \\<b\\>\n" in markdown
    page = html_document(doc)
    shown = url.replace("&", "&amp;")  # as HTML writes an "&", in the attribute and in the text
    assert f'<li>a runs: parent run *x*; its runs table: <a href="{shown}">{shown}</a></li>' in page
    assert "<li>a: ledger &lt;b&gt;</li>" in page


def test_a_link_is_only_an_http_address_and_cannot_break_its_markup(tmp_path: Path):
    doc = Document("t", (), (), (), (Linked("bad:", "javascript:alert(1)"), Linked("odd:", 'http://h/a b"<c>')))
    page = html_document(doc)
    assert "<li>bad: javascript:alert(1)</li>" in page and "href=\"javascript" not in page
    assert '<a href="http://h/a%20b%22%3Cc%3E">http://h/a b&quot;&lt;c&gt;</a>' in page
    markdown = markdown_document(doc, tmp_path)
    assert "- bad: javascript:alert(1)\n" in markdown and "- odd: <http://h/a%20b%22%3Cc%3E>\n" in markdown
