"""``showwork report --out DIR`` as a hostile user: DIR holds the user's files, links, an edited report.

A report replaces or removes only what its manifest (``DIR/.showwork-report.json``) says an earlier
report wrote, with the same SHA-256; anything else it would have to replace is refused with one
``showwork: error:`` line naming the file, before anything changes. A failing report leaves DIR as
it was (and does not create it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from showwork.errors import InputError
from showwork.report import ReportSettings, analyze, from_results_file, write_report
from showwork.report.output import MANIFEST_NAME, report_artifact_path

from helpers import run_cli

PNG = ("png",)


def _families(search_results_dir, n: int = 25):
    out = []
    for name, file in (("MLP", "reuters_mlp_f1.csv"), ("LSTM", "reuters_lstm_f1.csv")):
        family = from_results_file(search_results_dir / file, "f1", label=name)[0]
        out.append(family.first_trials(n))
    return out


@pytest.fixture(scope="module")
def two(search_results_dir):
    return analyze(_families(search_results_dir), ReportSettings(a=0.0, b=1.0))


@pytest.fixture(scope="module")
def one(search_results_dir):
    return analyze(_families(search_results_dir)[:1], ReportSettings(a=0.0, b=1.0))


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under root: files by content hash, links by target, folders as such."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link -> " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "folder"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def manifest(out: Path) -> dict[str, str]:
    return json.loads((out / MANIFEST_NAME).read_text())["files"]


def assert_manifest_is_the_report(out: Path, files) -> None:
    """The manifest lists exactly the files returned, with their current content."""
    listed = manifest(out)
    assert set(listed) == {p.relative_to(out).as_posix() for p in files.all()}
    for rel, sha in listed.items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == sha, rel


# ---------------------------------------------------------------- the user's files


def test_user_files_beside_the_report_are_kept(two, tmp_path):
    """The issue's case: names like a figure (cdfs.docx, comparison.txt) and the user's LaTeX were deleted."""
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    (out / "latex").mkdir()
    mine = {
        "notes.txt": "mine", "figures/cdfs.docx": "my document", "figures/comparison.txt": "my text",
        "figures/tuning_curves.jpeg": "my picture", "latex/mine.tex": "% my own table\n", "report.txt": "my report",
        # Named like the temp files the report once wrote through (a fixed name, so the user's file was overwritten
        # and renamed over the manifest); temp files now get unique names (showwork.files.write_atomic).
        f".{MANIFEST_NAME}.tmp": "mine", ".report.md.tmp": "mine too",
    }
    for rel, text in mine.items():
        (out / rel).write_text(text)
    files = write_report(two, out, figure_formats=PNG)
    for rel, text in mine.items():
        assert (out / rel).read_text() == text, rel
    assert_manifest_is_the_report(out, files)
    files = write_report(two, out, figure_formats=PNG)  # and again, over its own files
    for rel, text in mine.items():
        assert (out / rel).read_text() == text, rel
    assert_manifest_is_the_report(out, files)
    assert not [p.name for p in out.rglob("*.tmp") if p.relative_to(out).as_posix() not in mine]  # no temp file left


@pytest.mark.parametrize("rel", ["report.html", "report.md", "report.json", "figures/cdfs.png", "latex/families.tex"])
def test_a_user_file_where_the_report_writes_is_refused(two, tmp_path, rel):
    out = tmp_path / "out"
    (out / Path(rel).parent).mkdir(parents=True, exist_ok=True)
    (out / rel).write_text("the user's own file")
    (out / "figures").mkdir(exist_ok=True)
    (out / "figures" / "cdfs.docx").write_text("mine too")
    before = snapshot(out)
    with pytest.raises(InputError, match=rf"{rel}.*not written by showwork report"):
        write_report(two, out, figure_formats=PNG)
    assert snapshot(out) == before  # nothing written, nothing removed, no staging folder left


@pytest.mark.integration
def test_the_command_refuses_with_one_line_naming_the_file(capsys, tmp_path, search_results_dir):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("<p>my page</p>")
    code, _, err = run_cli(
        capsys, "report", search_results_dir / "reuters_mlp_f1.csv", "--score", "f1", "--formats", "png", "--out", out,
        "--no-mlflow",
    )
    assert code == 2 and err.startswith("showwork: error:") and err.count("\n") == 1, err
    assert str(out / "report.html") in err
    assert (out / "report.html").read_text() == "<p>my page</p>" and sorted(os.listdir(out)) == ["report.html"]


def test_an_edited_report_is_not_overwritten(two, tmp_path):
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)
    edited = (out / "report.md").read_text() + "\nMy notes on the results.\n"
    (out / "report.md").write_text(edited)
    before = snapshot(out)
    with pytest.raises(InputError, match=r"report\.md was changed since showwork wrote it"):
        write_report(two, out, figure_formats=PNG)
    assert snapshot(out) == before
    (out / "report.md").rename(tmp_path / "kept.md")  # what the message tells the user to do
    files = write_report(two, out, figure_formats=PNG)
    assert_manifest_is_the_report(out, files)


def test_an_edited_stale_figure_is_not_removed(two, one, tmp_path):
    """A file the next report would delete is protected like one it would overwrite."""
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)
    (out / "figures" / "comparison.png").write_bytes(b"my edited picture")
    with pytest.raises(InputError, match=r"comparison\.png was changed"):
        write_report(one, out, figure_formats=PNG)
    assert (out / "figures" / "comparison.png").read_bytes() == b"my edited picture"


def test_a_second_report_with_fewer_families_removes_only_its_own_stale_files(two, one, tmp_path):
    out = tmp_path / "out"
    first = write_report(two, out, figure_formats=("png", "svg"))
    assert (out / "figures" / "comparison.svg").is_file() and (out / "latex" / "comparisons.tex").is_file()
    (out / "notes.txt").write_text("mine")
    (out / "latex" / "mine.tex").write_text("% my own table -- generated by showwork report\n")  # looks like ours; is not
    (out / "figures" / "comparison.docx").write_text("mine")
    files = write_report(one, out, figure_formats=PNG)
    assert not (out / "figures" / "comparison.png").exists() and not (out / "latex" / "comparisons.tex").exists()
    assert not (out / "figures" / "cdfs.svg").exists()  # the first report's SVGs, stale now
    assert (out / "notes.txt").read_text() == "mine" and (out / "latex" / "mine.tex").exists()
    assert (out / "figures" / "comparison.docx").read_text() == "mine"
    assert_manifest_is_the_report(out, files)
    ours = {p.relative_to(out).as_posix() for p in files.all()} | {MANIFEST_NAME}
    user = {"notes.txt", "latex/mine.tex", "figures/comparison.docx"}
    assert {k for k, v in snapshot(out).items() if v != "folder"} == ours | user
    assert len(first.all()) > len(files.all())


# ---------------------------------------------------------------- links, files, permissions


def test_out_is_a_file_or_a_dangling_link(two, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        write_report(two, tmp_path / "file", figure_formats=PNG)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InputError, match="link to nothing"):
        write_report(two, tmp_path / "dangling", figure_formats=PNG)
    assert sorted(os.listdir(tmp_path)) == ["dangling", "file"] and (tmp_path / "file").read_text() == "x"


def test_out_is_a_link_to_a_folder_elsewhere(two, tmp_path):
    """The link is followed (it is the folder the user named), under the same rules as any folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "report.md").write_text("someone's report")
    (tmp_path / "out").symlink_to(elsewhere)
    with pytest.raises(InputError, match="not written by showwork"):
        write_report(two, tmp_path / "out", figure_formats=PNG)
    assert sorted(os.listdir(elsewhere)) == ["report.md"]
    (elsewhere / "report.md").unlink()
    files = write_report(two, tmp_path / "out", figure_formats=PNG)
    assert (tmp_path / "out").is_symlink() and (elsewhere / "report.html").is_file()
    assert_manifest_is_the_report(tmp_path / "out", files)


@pytest.mark.parametrize("rel", ["report.html", "figures/cdfs.png"])
def test_a_link_where_the_report_writes_is_refused_and_its_target_kept(two, tmp_path, rel):
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)  # the link replaces a file showwork wrote
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / rel).unlink()
    (out / rel).symlink_to(victim)
    before = snapshot(out)
    with pytest.raises(InputError, match="is a link or not a regular file"):
        write_report(two, out, figure_formats=PNG)
    assert snapshot(out) == before and victim.read_text() == "precious"


def test_a_linked_figures_folder_is_refused(two, tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "cdfs.png").write_text("not a figure of ours")
    (out / "figures").symlink_to(elsewhere)
    with pytest.raises(InputError, match="figures is not a folder showwork made"):
        write_report(two, out, figure_formats=PNG)
    assert sorted(os.listdir(elsewhere)) == ["cdfs.png"] and sorted(os.listdir(out)) == ["figures"]


@contextlib.contextmanager
def unwritable(folder: Path):
    """Make ``folder`` unwritable: mode 555, or for root (who writes anyway) the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("root writes into any folder, and this file system has no immutable attribute")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_an_unwritable_out_is_one_input_error(two, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with unwritable(out):
        with pytest.raises(InputError, match="cannot write the report"):
            write_report(two, out, figure_formats=PNG)
        assert os.listdir(out) == ["notes.txt"]
        with pytest.raises(InputError, match="cannot write the report"):
            write_report(two, out / "new", figure_formats=PNG)
        assert os.listdir(out) == ["notes.txt"]


def test_an_unwritable_figures_folder_is_refused_before_anything_moves(two, tmp_path):
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)
    before = snapshot(out)
    with unwritable(out / "figures"):
        with pytest.raises(InputError, match="cannot write into .*figures"):
            write_report(two, out, figure_formats=PNG)
    assert snapshot(out) == before


# ---------------------------------------------------------------- the manifest itself


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("not json", "is not valid JSON"),
        ('{"format": 1, "files": {"../victim.txt": "%s"}}', "not a file showwork report writes"),
        ('{"format": 1, "files": {"/etc/passwd": "%s"}}', "not a file showwork report writes"),
        ('{"files": {}}', "not a showwork report manifest"),
    ],
)
def test_a_forged_manifest_deletes_nothing(two, tmp_path, content, fragment):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST_NAME).write_text(content.replace("%s", hashlib.sha256(b"precious").hexdigest()))
    with pytest.raises(InputError, match=fragment):
        write_report(two, out, figure_formats=PNG)
    assert victim.read_text() == "precious" and sorted(os.listdir(out)) == [MANIFEST_NAME]


# ---------------------------------------------------------------- failures leave nothing half-done


class Failing(Exception):
    pass


def _fail_after_some_figures(monkeypatch):
    """The figures module writes its first figure, then fails as a full disk would."""
    import showwork.report.figures.saving as figures

    real = figures.save_figure
    calls = []

    def save(*args, **kwargs):
        calls.append(args)
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(figures, "save_figure", save)
    return calls


def test_a_failing_report_does_not_create_out_or_its_parents(two, tmp_path, monkeypatch):
    calls = _fail_after_some_figures(monkeypatch)
    with pytest.raises(InputError, match="No space left on device"):
        write_report(two, tmp_path / "a" / "b" / "out", figure_formats=PNG)
    assert len(calls) == 2 and os.listdir(tmp_path) == []


def test_a_failing_report_leaves_the_previous_one_whole(two, one, tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    _fail_after_some_figures(monkeypatch)
    with pytest.raises(InputError, match="No space left on device"):
        write_report(one, out, figure_formats=PNG)
    assert snapshot(out) == before


def test_a_report_killed_while_moving_files_in_is_finished_by_the_next(two, one, tmp_path, monkeypatch):
    """Mid-commit the manifest accepts old and new content, so the next report neither refuses nor leaks."""
    out = tmp_path / "out"
    write_report(two, out, figure_formats=PNG)
    (out / "notes.txt").write_text("mine")
    real_replace, moved = os.replace, []

    def replace(src, dst):
        staging = ".showwork-report-staging-"
        if staging in str(src) and staging not in str(dst):  # a staged file moving into DIR
            if len(moved) == 3:
                raise Failing("killed")
            moved.append(dst)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Failing):
        write_report(one, out, figure_formats=PNG)
    monkeypatch.undo()
    assert "incoming" in json.loads((out / MANIFEST_NAME).read_text())
    files = write_report(one, out, figure_formats=PNG)
    assert_manifest_is_the_report(out, files)
    assert (out / "notes.txt").read_text() == "mine" and not (out / "figures" / "comparison.png").exists()
    leftovers = [p.name for p in out.iterdir() if p.name.startswith(".showwork-report-staging-")]
    assert leftovers == []


# ---------------------------------------------------------------- MLflow gets the report, not the folder


@pytest.mark.integration
def test_only_the_reports_files_are_logged_to_mlflow(search_results_dir, tmp_path, monkeypatch):
    """--out may hold the user's own files: they are not uploaded with the report."""
    from mlflow.tracking import MlflowClient

    from showwork.report import log_report

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("reuters", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(experiment).info.run_id
    family = _families(search_results_dir)[0]
    family = dataclasses.replace(family, meta={**family.meta, "tracking_uri": uri, "parent_run_id": run_id, "experiment": "reuters"})
    report = analyze([family], ReportSettings(a=0.0, b=1.0))
    out = tmp_path / "out"
    out.mkdir()
    (out / "private-notes.txt").write_text("not for the tracking server")
    files = write_report(report, out, figure_formats=PNG)
    assert log_report(report, files) == [run_id]

    def listed(path: str) -> set[str]:
        found = set()
        for entry in client.list_artifacts(run_id, path):
            found |= listed(entry.path) if entry.is_dir else {entry.path}
        return found

    assert listed("report") == {"report/" + p.relative_to(out).as_posix() for p in files.all()}


@pytest.mark.integration
def test_a_report_of_two_searches_does_not_overwrite_a_searchs_own_report(search_results_dir, tmp_path, monkeypatch):
    """Issue 15 item 7: `showwork report A B` overwrote search A's `report/`; it goes to `reports/<names>/` now."""
    from mlflow.tracking import MlflowClient

    from showwork.report import log_report

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    families = []
    for family in _families(search_results_dir):
        experiment = client.create_experiment(family.name, artifact_location=(tmp_path / family.name).as_uri())
        run_id = client.create_run(experiment).info.run_id
        families.append(dataclasses.replace(
            family, meta={**family.meta, "tracking_uri": uri, "parent_run_id": run_id, "experiment": family.name}))
    mlp, lstm = (family.meta["parent_run_id"] for family in families)

    def report_md(run_id: str, path: str) -> str:
        return Path(client.download_artifacts(run_id, f"{path}/report.md", str(tmp_path / "back" / run_id / path))).read_text()

    single = analyze(families[:1], ReportSettings(a=0.0, b=1.0))
    assert report_artifact_path(single) == "report"
    assert log_report(single, write_report(single, tmp_path / "mlp", figure_formats=PNG)) == [mlp]
    own = report_md(mlp, "report")
    both = analyze(families, ReportSettings(a=0.0, b=1.0))
    assert report_artifact_path(both) == "reports/MLP_vs_LSTM"
    assert log_report(both, write_report(both, tmp_path / "both", figure_formats=PNG)) == [mlp, lstm]
    assert report_md(mlp, "report") == own  # the search's own report is untouched
    assert "LSTM" in report_md(mlp, "reports/MLP_vs_LSTM") == report_md(lstm, "reports/MLP_vs_LSTM")
    assert [f.path for f in client.list_artifacts(lstm)] == ["reports"]


def test_report_artifact_names_are_legal_and_distinct(two):
    def named(report, rename):
        return dataclasses.replace(report, families=tuple(
            dataclasses.replace(f, results=dataclasses.replace(f.results, name=rename(f.name))) for f in report.families))

    odd = named(two, lambda name: f"{name}/../x y")
    path = report_artifact_path(odd)
    assert re.fullmatch(r"reports/[A-Za-z0-9._-]+-[0-9a-f]{8}", path) and ".." not in path.split("/")
    assert path != report_artifact_path(named(two, lambda name: f"{name}/../x_y"))  # cleaned alike, still distinct
    long = named(two, lambda name: name * 80)
    assert len(report_artifact_path(long)) == len("reports/") + 100
    assert report_artifact_path(long) != report_artifact_path(two)


def test_a_new_out_gets_the_users_default_mode(two, tmp_path):
    old = os.umask(0o022)
    try:
        write_report(two, tmp_path / "out", figure_formats=PNG)
    finally:
        os.umask(old)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "out" / "report.html").stat().st_mode & 0o777 == 0o644
