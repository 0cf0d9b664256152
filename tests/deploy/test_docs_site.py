"""Issue 26 item 1: the documentation site, as a reader meets it.

``mkdocs build --strict`` (what ``make docs`` runs) builds the site from ``docs/`` and ``mkdocs.yml``;
every built page is opened in headless Chromium and must render (its title and h1, the Material
theme's content area not empty, not MkDocs' 404 page); every internal link of every page must reach a
built file and, with a fragment, an element of that id. The CLI reference is generated from the parser
at build time, so it must list every command and every option the parser has. README.md stays a short
front page that holds the two commands for a fresh machine.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from showwork.cli import build_parser

from helpers import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


needs_chromium = pytest.mark.skipif(chromium() is None and not os.environ.get("CI"), reason="no Chromium here (CI installs it)")


# --- README.md: the front page -----------------------------------------------------------------------------


def test_readme_is_at_most_150_lines_and_holds_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    section = text.split("## Two commands for a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S) for line in block.splitlines()]
    assert commands == ["make demo", "make test"], commands


def test_the_readme_links_to_files_that_exist_and_shows_a_committed_figure():
    text = README.read_text(encoding="utf-8")
    targets = [unquote(urlsplit(href).path) for href in re.findall(r"\]\(([^)\s]+)\)", text) if not urlsplit(href).scheme]
    assert targets
    missing = [target for target in targets if target and not (REPO_ROOT / target).exists()]
    assert not missing, missing
    assert re.search(r"!\[[^\]]+\]\(docs/images/[^)]+\.png\)", text), "README.md shows no figure from docs/images/"


def test_every_image_under_docs_images_is_shown_on_a_page():
    pages = "".join(path.read_text(encoding="utf-8") for path in [README, *DOCS.rglob("*.md")])
    images = [image.relative_to(DOCS).as_posix() for image in (DOCS / "images").rglob("*") if image.is_file()]
    unused = [image for image in images if image not in pages]
    assert not unused, unused


# --- the built site ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `make docs` builds it (strict: any warning fails), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO_ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@dataclass
class Page:
    """What a page's DOM holds: its title, h1, the content area's text, every id and every href."""

    title: str = ""
    h1: str = ""
    content_text: str = ""
    ids: set[str] = field(default_factory=set)
    hrefs: list[str] = field(default_factory=list)


class _PageReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.page = Page()
        self._in: list[str] = []  # open elements whose text we collect: "title", "h1", "content"
        self._depth_of_content: int | None = None
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id"):
            self.page.ids.add(attributes["id"])
        if tag == "a" and attributes.get("name"):
            self.page.ids.add(attributes["name"])
        if tag == "a" and attributes.get("href") is not None:
            self.page.hrefs.append(attributes["href"])
        if tag in ("br", "img", "input", "meta", "link", "hr", "source", "wbr"):
            return
        self._depth += 1
        if tag in ("title", "h1"):
            self._in.append(tag)
        if tag == "article" and "md-content__inner" in (attributes.get("class") or "").split():
            self._depth_of_content = self._depth

    def handle_endtag(self, tag):
        if tag in ("title", "h1") and tag in self._in:
            self._in.remove(tag)
        if self._depth_of_content == self._depth:
            self._depth_of_content = None
        self._depth -= 1

    def handle_data(self, data):
        if "title" in self._in:
            self.page.title += data
        if "h1" in self._in:
            self.page.h1 += data
        if self._depth_of_content is not None:
            self.page.content_text += data


def read_page(html: str) -> Page:
    reader = _PageReader()
    reader.feed(html)
    page = reader.page
    page.title, page.h1, page.content_text = (" ".join(text.split()) for text in (page.title, page.h1, page.content_text))
    return page


def browse(path: Path) -> tuple[str, list[str]]:
    """The page's DOM after Chromium loaded it and ran its scripts, and what it wrote to the console (each message
    without Chromium's process id and time: ``"Uncaught ...", source: file:///.../bundle.js (14)``)."""
    with tempfile.TemporaryDirectory() as profile:  # one profile per browser: they run side by side
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
    assert done.returncode == 0 and "<html" in done.stdout, (path, done.stderr[-2000:])
    return done.stdout, re.findall(r":CONSOLE:\d+\] (.*)", done.stderr)


def dump_dom(path: Path) -> str:
    """The page's DOM after Chromium loaded it and ran its scripts."""
    return browse(path)[0]


@pytest.fixture(scope="module")
def rendered(site) -> dict[Path, Page]:
    """Every built page (MkDocs' own 404 page aside) as Chromium renders it, by its path in the site."""
    paths = sorted(path for path in site.rglob("*.html") if path.name != "404.html")
    with ThreadPoolExecutor(max_workers=3) as pool:
        doms = list(pool.map(dump_dom, paths))
    return {path.relative_to(site): read_page(dom) for path, dom in zip(paths, doms)}


@pytest.mark.slow
@pytest.mark.integration
@needs_chromium
def test_every_page_renders_in_headless_chromium(site, rendered):
    nav_pages = {"index.html", "tutorial.html", "statistics.html", "reliability.html", "development.html", "changelog.html",
                 "reference/cli.html", "reference/api.html", "experiments/index.html", "how-to/docker.html",
                 "how-to/notebook.html"}
    assert nav_pages <= {str(path) for path in rendered}, sorted(map(str, rendered))
    not_found = read_page((site / "404.html").read_text(encoding="utf-8")).h1
    for path, page in rendered.items():
        assert page.title and page.h1, (path, page.title, page.h1)
        assert page.h1 != not_found and "404" not in page.title, (path, page.title)
        assert len(page.content_text) > len(page.h1) + 40, (path, page.content_text[:200])


def resolve(page: Path, href: str) -> tuple[Path, str] | None:
    """The site path and fragment an internal link of ``page`` points at; None for a link off the site."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith("/"):
        return None
    target = page if not parts.path else Path(os.path.normpath(page.parent / unquote(parts.path)))
    return target, unquote(parts.fragment)


@pytest.mark.slow
@pytest.mark.integration
@needs_chromium
def test_every_internal_link_reaches_a_built_page_and_an_existing_anchor(site, rendered):
    broken = []
    checked = 0
    for path, page in rendered.items():
        for href in page.hrefs:
            target = resolve(path, href)
            if target is None:
                continue
            file, fragment = target
            checked += 1
            if str(file).startswith("..") or not (site / file).is_file():
                broken.append(f"{path}: {href} (no file {file})")
            elif fragment and file.suffix == ".html" and fragment not in rendered[file].ids:
                broken.append(f"{path}: {href} (no id {fragment!r} in {file})")
    assert checked > 500, checked  # the navigation alone links every page from every page
    assert not broken, "\n".join(broken)


# --- the CLI reference -----------------------------------------------------------------------------------------


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (subparsers,) = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return dict(subparsers.choices)


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of ``parser`` (help and the commands aside) and the name each positional argument is shown by."""
    out = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        out += action.option_strings or [action.metavar or action.dest]
    return out


@pytest.mark.slow
@pytest.mark.integration
def test_the_cli_reference_lists_every_command_and_every_option_of_the_parser(site):
    html = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    parser = build_parser()
    commands = commands_of(parser)
    assert len(commands) >= 12, sorted(commands)
    # Each command's section runs from its heading to the next h2.
    sections = dict(re.findall(r'<h2 id="showwork-([a-z-]+)">(.*?)(?=<h2 |</article>)', html, flags=re.S))
    assert set(sections) == set(commands), (sorted(sections), sorted(commands))
    for name, command in commands.items():
        shown = {unescape_code(code) for code in re.findall(r"<code>(.*?)</code>", sections[name], flags=re.S)}
        missing = [option for option in options_of(command) if option not in shown]
        assert not missing, f"showwork {name}: the reference lacks {missing}"
        assert command.format_usage().split()[1:3] == ["showwork", name]
        assert f"usage: showwork {name}" in sections[name], name
    for option in options_of(parser):  # --version, --debug
        assert f"<code>{option}</code>" in html, option


def unescape_code(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


# --- the example notebook's page (issue 37 item 4) ---------------------------------------------------------------


def notebook_hook():
    """docs/_hooks/notebook.py, the hook that makes the page ``how-to/notebook.md`` of examples/notebook.ipynb."""
    spec = importlib.util.spec_from_file_location("notebook_hook", DOCS / "_hooks" / "notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_size(encoded: str) -> tuple[int, int]:
    """Width and height of a base64 PNG, read from its IHDR chunk; fails on anything that is not a PNG."""
    data = base64.b64decode(encoded, validate=True)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", data[:16]
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
@pytest.mark.integration
@needs_chromium
def test_the_notebook_page_shows_every_output_of_the_notebook_and_no_markup_as_text(site):
    dom, console = browse(site / "how-to" / "notebook.html")
    content = dom.split('class="md-content__inner', 1)[1].split("</article>", 1)[0]
    hook = notebook_hook()
    notebook = json.loads(hook.NOTEBOOK.read_text(encoding="utf-8"))
    shown = [o for cell in notebook["cells"] if cell["cell_type"] == "code" for o in cell["outputs"] if hook.output_html(o)]
    assert content.count('<div class="notebook-output">') == len(shown) > 5
    # The search shows its tables and its tuning curve, inline; so do the curve and the report.
    assert re.search(r'<div class="showwork-search">.*?<table>.*?</table>', content, flags=re.S)
    assert re.search(r'<div class="showwork-race">.*?<table>.*?</table>', content, flags=re.S)
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', content)
    assert len(images) >= 3 and all(min(png_size(image)) > 100 for image in images), len(images)
    # Markup of the outputs is markup, not text; none of it runs.
    assert not re.search(r"&lt;(table|div|img|pre|p|span)\b", content)
    assert "<script" not in content and not re.search(r"\son[a-z]+=", content)
    # Whatever the theme logs on every page (its search index, read from file://), and nothing more.
    _, console_elsewhere = browse(site / "how-to" / "python.html")
    normalised = {line.replace("how-to/python.html", "PAGE") for line in console_elsewhere}
    assert {line.replace("how-to/notebook.html", "PAGE") for line in console} <= normalised, console


# What a notebook's outputs could hold: each would change the page's title to "ran", or cover it, if it ran.
HOSTILE_OUTPUTS = (
    '<script>document.title = "ran"</script>',
    "<img src=\"x\" onerror=\"document.title = 'ran'\">",
    "<img src=\"data:image/png;base64,iVBORw0KGgo=\" onload=\"document.title = 'ran'\">",
    "<a href=\"javascript:document.title = 'ran'\">a link</a>",
    "<svg onload=\"document.title = 'ran'\"><script>document.title = 'ran'</script></svg>",
    "<iframe srcdoc=\"&lt;script&gt;parent.document.title = 'ran'&lt;/script&gt;\"></iframe>",
    '</div></article><script>document.title = "ran"</script>',
    '<div style="position:fixed;inset:0;background:red" onclick="x">cover</div>',
    '<scr<script>ipt>document.title = "ran"</scr</script>ipt>',
    '<!-- --><script>document.title = "ran"</script><style>body { display: none }</style>',
    '<img src="data:text/html;base64,PHNjcmlwdD5kb2N1bWVudC50aXRsZT0ncmFuJzwvc2NyaXB0Pg==">',
    "<table><tr><td><p>left open",
)


def hostile_page_outputs() -> str:
    """The raw HTML blocks the hook writes for a notebook whose outputs are :data:`HOSTILE_OUTPUTS`, and an SVG
    with a script."""
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": markup, "text/plain": "x"}}
               for markup in HOSTILE_OUTPUTS]
    outputs.append({"output_type": "display_data", "metadata": {}, "data": {
        "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg' onload=\"document.title='ran'\"><script>"
                         "document.title='ran'</script><rect width='10' height='10'/></svg>"}})
    notebook = {"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "outputs": outputs}]}
    markdown = notebook_hook().notebook_markdown(notebook)
    return "\n\n".join(block for block in markdown.split("\n\n") if block.startswith('<div class="notebook-output">'))


def test_the_notebook_page_rebuilds_each_output_from_an_allow_list():
    blocks = hostile_page_outputs()
    for needle in ("<script", "<iframe", "<svg", "<style", "<a ", "javascript:", "onerror", "onload", "onclick",
                   "style=", "srcdoc", 'src="x"', "data:text/html"):
        assert needle not in blocks, needle
    assert "cover" in blocks and "a link" in blocks and "<td><p>left open</p></td></tr></table>" in blocks
    assert '<img src="data:image/svg+xml;base64,' in blocks  # the SVG as an image, where scripts do not run
    assert blocks.count("<div") == blocks.count("</div>")


@pytest.mark.slow
@needs_chromium
def test_no_output_of_a_notebook_runs_a_script_in_chromium(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(f"<!doctype html><html><head><title>clean</title></head><body><article>{hostile_page_outputs()}"
                    "</article><p id='after'>after</p></body></html>", encoding="utf-8")
    dom, console = browse(page)
    assert "<title>clean</title>" in dom and "ran" not in dom.split("<body>", 1)[0], dom[:300]
    assert "<script" not in dom and "<iframe" not in dom
    assert re.search(r"</article>\s*<p id=\"after\">after</p>", dom), dom[-500:]  # no output closed the page's elements
    assert not console, console
