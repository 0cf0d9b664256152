"""Write a report to a directory, and attach it to the searches' MLflow parent runs.

``--out DIR`` receives::

    report.md            the report in Markdown (figures linked as PNG)
    report.html          one self-contained page (figures embedded)
    report.json          every number, for scripts
    latex/<table>.tex    one LaTeX table snippet per table and checklist (booktabs, longtable)
    latex/preamble.tex   the preamble those tables and the PGF figures compile with
    figures/<name>.png   and .svg, .pdf (.pgf if asked): tuning curves, CDFs, comparison, scores by parameter
    .showwork-report.json  the manifest: every file above with its SHA-256

Anything else in DIR is the user's: a report never replaces or removes a file its manifest does not
list with that content (see :func:`write_report`).

This module is the edge where files are written; everything it writes is computed by the pure
modules :mod:`~showwork.report.analysis`, :mod:`~showwork.report.document`,
:mod:`~showwork.report.tables`, :mod:`~showwork.report.checklist`, :mod:`~showwork.report.figures`,
:mod:`~showwork.report.render` and :mod:`~showwork.report.latex`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from showwork.errors import InputError
from showwork.files import write_atomic
from showwork.report.checklist import build_checklist
from showwork.report.contents import Report
from showwork.report.document import report_document, report_json
from showwork.report.figures import FigureStyle, page_grid, report_figures
from showwork.report.inputs import iid_caveat
from showwork.report.latex import latex_snippets
from showwork.report.notebook import report_files_html, report_files_text
from showwork.report.render import html_document, markdown_document
from showwork.tracking.tracker import Tracker

__all__ = [
    "FROM_MLFLOW_ARTIFACTS", "MANIFEST_NAME", "ReportFiles", "WrittenThenInterrupted", "log_report", "read_from_mlflow",
    "report_artifact_path", "write_report",
]

@dataclass(frozen=True)
class ReportFiles:
    """The files a report wrote."""

    directory: Path
    markdown: Path
    html: Path
    json: Path
    latex: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, list[Path]] = field(default_factory=dict)

    def all(self) -> list[Path]:
        out = [self.markdown, self.html, self.json, *self.latex.values()]
        for paths in self.figures.values():
            out.extend(paths)
        return out

    def __repr__(self) -> str:
        return report_files_text(self)

    def _repr_html_(self) -> str:
        """What Jupyter shows: a link to ``report.html``, the main figure (its PNG as written), the files."""
        return report_files_html(self)


MANIFEST_NAME = ".showwork-report.json"
"""The file in ``--out DIR`` that lists every file the last report wrote there, with its SHA-256."""
_MANIFEST_FORMAT = 1
_OUTPUT_NAME = re.compile(r"(report\.(md|html|json)|latex/[A-Za-z0-9_]+\.tex|figures/[A-Za-z0-9_-]+\.(png|svg|pdf|pgf))")
"""The relative paths a report writes; a manifest naming anything else is not one of ours."""
_FIXED_OUTPUTS = ("report.md", "report.html", "report.json")


def write_report(
    report: Report,
    directory: str | os.PathLike,
    *,
    figure_formats: tuple[str, ...] = ("png", "svg", "pdf"),
    log_x: bool | None = None,
    figure_style: FigureStyle = FigureStyle(),
) -> ReportFiles:
    """Write every output of ``report`` under ``directory``, all or nothing.

    ``figure_formats`` (PNG is always written: the documents show it), ``log_x`` and
    ``figure_style`` go to :func:`~showwork.report.figures.report_figures`.

    The report is first written in full into a hidden staging folder (beside ``directory`` when
    it does not exist yet, else inside it), so a report that fails — a figure that cannot be
    drawn, a full disk — leaves ``directory`` as it was (and does not create it). Then:

    - a new ``directory`` is the staging folder renamed into place (one atomic rename);
    - in an existing ``directory`` each file is renamed into place, the files the previous report
      wrote and this one does not are removed, and ``.showwork-report.json`` lists what was written.

    Only files that an earlier report wrote are replaced or removed: that is, files listed in the
    manifest whose content is still what showwork wrote (same SHA-256). Anything else a report
    would have to replace or remove — a user's own ``report.html``, a file a user edited since
    the last report, a symbolic link, a folder — is refused before anything changes. Files the
    report does not write are never touched. During the renames the manifest lists both the old
    and the new content of each file, so a report killed half-way is cleaned up by the next one.

    Ctrl-C or SIGTERM (where a handler turns it into ``KeyboardInterrupt``, as ``showwork report``
    does) while the figures are drawn removes the staging folder, as any error does; one that comes
    while the files are moved into place is held until the report is whole there, then raised as
    :class:`WrittenThenInterrupted`.

    Raises
    ------
    InputError
        ``directory`` is not a directory or cannot be written; a file there was not written by
        showwork, or was changed since (named); the manifest is not one showwork wrote.
    WrittenThenInterrupted
        Ctrl-C or SIGTERM came while the files were moved into place; the report is written.
    """
    out = Path(directory)
    formats = tuple(dict.fromkeys(("png", *figure_formats)))  # the documents embed or link the PNGs
    if out.is_symlink() and not out.exists():
        raise InputError(f"--out {out}: is a symbolic link to nothing; give an existing folder or a new path.")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory.")
    if out.is_dir():
        # Refuse early, before the figures are drawn, what the commit would refuse for sure.
        previous = _read_manifest(out)
        _check_replaceable(out, previous, set(previous) | set(_FIXED_OUTPUTS))
    created: list[Path] = []
    staging: Path | None = None
    held = _HeldSignals()
    try:
        try:
            if out.is_dir():
                staging = _new_folder(out, ".showwork-report-staging-")
            else:
                created = _make_parents(out.parent)
                staging = _new_folder(out.parent, f".{out.name}.showwork-report-staging-")
            files = _write_outputs(report, staging, formats, log_x, figure_style)
            written = {p.relative_to(staging).as_posix(): _sha256(p) for p in files.all()}
            held.start()  # from here on the renames and the clean-up are done whole, never cut short by a signal
            if out.is_dir():
                _commit_into(out, staging, written)
            else:
                _write_manifest(staging, written)
                staging.rename(out)  # a new DIR appears whole, or not at all
                staging = None
        except OSError as error:
            raise InputError(f"--out {out}: cannot write the report ({error.strerror or error}).") from None
    except BaseException:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(created):  # only the folders this call made, and only if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        held.deliver()
        raise
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    moved = _moved(files, staging_root=files.directory, out=out)
    try:
        held.deliver()
    except KeyboardInterrupt:
        raise WrittenThenInterrupted(moved) from None
    return moved


class WrittenThenInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM came while :func:`write_report` moved a report into place: held until the report was
    whole there, then raised. ``files``: the report written."""

    def __init__(self, files: ReportFiles) -> None:
        super().__init__()
        self.files = files


class _HeldSignals:
    """SIGINT and SIGTERM held from :meth:`start` (only recorded) until :meth:`deliver` sends them to the handlers
    in place before (Python's and ``showwork report``'s raise ``KeyboardInterrupt``; SIGTERM's default ends the process)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signals: list[int] = []
        self._previous: dict[int, Any] = {}

    def start(self) -> None:
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            self._previous = {signum: signal.signal(signum, self._record) for signum in self.SIGNALS}

    def _record(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)

    def deliver(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        self._previous = {}
        for signum in dict.fromkeys(self.signals):
            signal.raise_signal(signum)


def _write_outputs(report: Report, root: Path, formats: tuple[str, ...], log_x: bool | None, style: FigureStyle) -> ReportFiles:
    """Every output of the report under ``root`` (a fresh, empty folder)."""
    not_iid = [f.name for f in report.families if iid_caveat(f.results)]
    named = ", ".join(not_iid) if len(not_iid) <= 3 else f"{len(not_iid)} families, see the report"  # titles stay one line
    figures = report_figures(report, root / "figures", formats=formats, log_x=log_x,
                             title_note=f"not i.i.d.: {named}" if not_iid else None, style=style)
    checklist = build_checklist(report)
    with style.rc_context():  # the pages' grid depends on the figures' size and font
        per_page = math.prod(page_grid(style.figsize))
    doc = report_document(report, figures, checklist, per_page, style.curves)
    markdown = _write(root / "report.md", markdown_document(doc, root))
    page = _write(root / "report.html", html_document(doc))
    data = _write(root / "report.json", json.dumps(report_json(report, checklist), indent=2, ensure_ascii=False) + "\n")
    latex = {key: _write(root / "latex" / f"{key}.tex", text) for key, text in latex_snippets(doc.tables).items()}
    return ReportFiles(root, markdown, page, data, latex, figures)


def _moved(files: ReportFiles, staging_root: Path, out: Path) -> ReportFiles:
    """The same files, at their places under ``out``."""

    def moved(path: Path) -> Path:
        return out / path.relative_to(staging_root)

    return ReportFiles(
        out,
        moved(files.markdown),
        moved(files.html),
        moved(files.json),
        {key: moved(p) for key, p in files.latex.items()},
        {name: [moved(p) for p in paths] for name, paths in files.figures.items()},
    )


def _new_folder(parent: Path, prefix: str) -> Path:
    """A new folder ``parent/<prefix><random>`` with the user's default mode (it may become DIR itself).

    Not :func:`tempfile.mkdtemp`, whose folders are 0700: a new DIR would not be readable by whom the
    user's umask allows, unlike a folder the user made.
    """
    for _ in range(100):
        folder = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(f"no free name for a staging folder in {parent}")


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; return those created, outermost first."""
    missing = []
    while not folder.exists() and not folder.is_symlink():
        missing.append(folder)
        folder = folder.parent
    created = []
    for path in reversed(missing):
        path.mkdir()
        created.append(path)
    return created


def _commit_into(out: Path, staging: Path, written: dict[str, str]) -> None:
    """Move the staged files into the existing ``out``, replacing and removing only the last report's files."""
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        with contextlib.suppress(OSError):  # a courtesy: some network file systems lock no folder
            fcntl.flock(fd, fcntl.LOCK_EX)  # two reports into one DIR commit one after the other
        previous = _read_manifest(out)
        _check_replaceable(out, previous, set(previous) | set(written))
        for folder in {out, *((out / rel).parent for rel in written)}:
            if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
                raise InputError(f"--out {out}: cannot write into {folder} (permission denied).")
        # Until the renames are done, either content of a file is showwork's.
        _write_manifest(out, {rel: sorted(hashes) for rel, hashes in previous.items()}, incoming=written)
        for rel in sorted(written):
            target = out / rel
            target.parent.mkdir(exist_ok=True)
            os.replace(staging / rel, target)
        for rel in sorted(set(previous) - set(written)):
            with contextlib.suppress(FileNotFoundError):
                (out / rel).unlink()
        _write_manifest(out, written)
    finally:
        os.close(fd)


def _check_replaceable(out: Path, previous: dict[str, set[str]], paths: set[str]) -> None:
    """Refuse (InputError, naming the file) unless every existing ``out/path`` is a file showwork wrote, unchanged."""
    for rel in sorted(paths):
        target = out / rel
        for folder in (out / part for part in Path(rel).parents if part != Path(".")):
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise InputError(
                    f"--out {out}: {folder} is not a folder showwork made (a link or a file); move it away or choose another --out."
                )
        if not os.path.lexists(target):
            continue
        if target.is_symlink() or not target.is_file():
            raise InputError(
                f"--out {out}: {target} is a link or not a regular file, which showwork does not replace;"
                " move it away or choose another --out."
            )
        if rel not in previous:
            raise InputError(
                f"--out {out}: {target} exists and was not written by showwork report (it is not in {MANIFEST_NAME});"
                " move it away or choose another --out."
            )
        if _sha256(target) not in previous[rel]:
            raise InputError(
                f"--out {out}: {target} was changed since showwork wrote it; move it away (or delete it) to write"
                " the report here, or choose another --out."
            )


def _read_manifest(out: Path) -> dict[str, set[str]]:
    """The files the last report wrote in ``out``: relative path -> the SHA-256 it may have (empty without a manifest)."""
    path = out / MANIFEST_NAME
    if not os.path.lexists(path):
        return {}
    problem = None
    if path.is_symlink() or not path.is_file():
        problem = "is a link or not a regular file"
    else:
        try:
            with path.open("rb") as handle:
                data = json.loads(handle.read(16 * 1024 * 1024).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            problem = "is not valid JSON"
        else:
            if not isinstance(data, dict) or data.get("format") != _MANIFEST_FORMAT:
                problem = f"is not a showwork report manifest (format {_MANIFEST_FORMAT})"
    if problem is None:
        hashes: dict[str, set[str]] = {}
        for section in ("files", "incoming"):
            entries = data.get(section, {})
            if not isinstance(entries, dict):
                problem = f"has a malformed {section!r} section"
                break
            for rel, value in entries.items():
                values = value if isinstance(value, list) else [value]
                if not _OUTPUT_NAME.fullmatch(rel) or not all(isinstance(v, str) for v in values):
                    problem = f"lists {rel!r}, which is not a file showwork report writes"
                    break
                hashes.setdefault(rel, set()).update(values)
            if problem:
                break
    if problem is not None:
        raise InputError(f"--out {out}: {path} {problem}; move it away or choose another --out.")
    return hashes


def _write_manifest(out: Path, files: dict[str, str | list[str]], incoming: dict[str, str] | None = None) -> None:
    data: dict = {
        "format": _MANIFEST_FORMAT,
        "about": "Files showwork report wrote here, with their SHA-256; the next report replaces or removes only these.",
        "files": dict(sorted(files.items())),
    }
    if incoming is not None:
        data["incoming"] = dict(sorted(incoming.items()))
    _write(out / MANIFEST_NAME, json.dumps(data, indent=2) + "\n")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write(path: Path, text: str) -> Path:
    """Write atomically and durably (:func:`showwork.files.write_atomic`): a reader never sees half a file."""
    return write_atomic(path, text, mode=0o666)  # the umask decides, as for any file the user creates


_ARTIFACT_NAME_LENGTH = 100


FROM_MLFLOW_ARTIFACTS = "reports/from-mlflow"
"""Where a report read back from MLflow (``mlflow:`` sources) goes on the parent runs: never the search's own ``report/``."""


def read_from_mlflow(family) -> bool:
    """Whether a family's results were read back from MLflow's runs (``mlflow:``), not from its search's ledger.

    :func:`showwork.report.sources_mlflow.from_mlflow` records the runs it read in ``meta["run_ids"]``.
    """
    return "run_ids" in family.results.meta


def report_artifact_path(report: Report) -> str:
    """The artifact folder of a report on its searches' parent runs.

    A report of one search from its ledger goes to ``report/``, where ``showwork search`` suggests
    it. A report of several goes to ``reports/<names>/``, ``<names>`` being the families' names
    joined by ``_vs_`` (other characters than letters, digits, ``.``, ``-`` and ``_`` as ``_``; a
    name over 100 characters cut, with the first 8 hex digits of the SHA-256 of the names added):
    ``showwork report A B`` overwrote search A's own ``report/``. A report with a family read back
    from MLflow goes under ``reports/from-mlflow/<names>/``: ``showwork report mlflow:NAME``
    replaced the search's own ``report/``, which its ledger makes richer (its re-runs over seeds),
    with a poorer one (issue 23 item 17). The same families compared again replace their earlier
    comparison; other families get another folder.
    """
    names = [family.name for family in report.families]
    from_mlflow = any(read_from_mlflow(family) for family in report.families)
    if len(names) == 1 and not from_mlflow:
        return "report"
    joined = "_vs_".join(names)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", joined).strip(".") or "report"
    if len(name) > _ARTIFACT_NAME_LENGTH or name != joined:  # cut or changed: the digest keeps it unique
        digest = hashlib.sha256("\0".join(names).encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[: _ARTIFACT_NAME_LENGTH - 9]}-{digest}"
    return f"{FROM_MLFLOW_ARTIFACTS if from_mlflow else 'reports'}/{name}"


def log_report(report: Report, files: ReportFiles, artifact_path: str | None = None) -> list[str]:
    """Log the report's files (not the rest of its directory) as artifacts of every search's MLflow parent run.

    Families read from a ledger know their tracking URI and parent run; results files do not and
    are skipped. The files go under ``artifact_path``, by default :func:`report_artifact_path`.
    Returns the run ids logged to.

    Raises
    ------
    showwork.tracking.errors.TrackingUnavailableError
        The tracking store cannot be reached (after retries).
    """
    runs: dict[str, tuple[str, str]] = {}  # parent run id -> (tracking URI, experiment)
    for f in report.families:
        uri, run_id = f.results.meta.get("tracking_uri"), f.results.meta.get("parent_run_id")
        if uri and run_id and run_id not in runs:
            runs[run_id] = (uri, (f.results.spec or {}).get("name") or f.results.meta.get("experiment") or f.name)
    done: list[str] = []
    if not runs:
        return done
    with tempfile.TemporaryDirectory(prefix="showwork-report-artifacts-") as copy:
        # Only the report's own files: --out may hold the user's files, which are not for MLflow.
        for path in files.all():
            target = Path(copy) / path.relative_to(files.directory)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        for run_id, (uri, experiment) in runs.items():
            path = report_artifact_path(report) if artifact_path is None else artifact_path
            Tracker(uri, experiment).log_report(run_id, copy, path)
            done.append(run_id)
    return done
