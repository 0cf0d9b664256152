"""Every string escaped for the document it enters (issue 34 item 2): properties of showwork.escaping over hostile text.

Hostile text: the specials of each target, every C0 and C1 control and DEL, the bidi controls, lone
surrogates, emoji, combining marks, very long strings. For each target: no control character
survives; the HTML reads back (html.parser, html.unescape) as the visible text; rendered Markdown
(markdown-it, CommonMark with GitHub's tables and strikethrough) shows the visible text and no
markup; LaTeX holds no special but the commands the escaping writes, and (slow) a document of
hostile strings compiles with pdfLaTeX and LuaLaTeX and runs nothing under ``-shell-escape``.
"""

from __future__ import annotations

import html
import io
import os
import random
import re
import shutil
import subprocess
import unicodedata
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from showwork.escaping import fitted_to_encoding, html_text, latex_text, markdown_text, terminal_text, visible_text

SPECIALS = "\\{}$&#^_~%<>|*[]`!@\"'-+=.:;()/"
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]
BIDI = [chr(c) for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
OTHERS = ["😀", "👩‍👩‍👧", "é", "e\u0301", "q\u0301\u0323", "中文", "ü", "ą", "Ω", "α", "≈≤≥×–—−∞±…’“”✕₂", "\u00a0",
          "\u00ad", "\u200b", "\u2028", "\ufeff", "\ufffe", "x", " ", "1. ", "- ", "    ", "&amp;", "&#x202e;", "$x$"]
HOSTILE = st.lists(st.sampled_from([*SPECIALS, *CONTROLS, *BIDI, *SURROGATES, *OTHERS]) | st.characters()
                   | st.integers(0xD800, 0xDFFF).map(chr), max_size=40).map("".join)
LONG = st.builds(lambda part, times: part * times, HOSTILE, st.integers(1, 400))
ANY_TEXT = HOSTILE | LONG

# What none of the targets lets through: Cc (but "\n" where a target keeps line breaks), bidi, surrogates.
BANNED = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def test_the_banned_set_is_unicodes():
    """The pattern above, and so the module's, is Unicode's: category Cc and Cs, property Bidi_Control."""
    for code in range(0x110000):
        char = chr(code)
        expected = unicodedata.category(char) in ("Cc", "Cs") or unicodedata.bidirectional(char) in (
            "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI") or code in (0x061C, 0x200E, 0x200F)
        assert bool(BANNED.match(char)) == (expected and char != "\n"), hex(code)


def no_raw_control(text: str, newline: bool) -> None:
    assert not BANNED.search(text), ascii(text)
    assert newline or "\n" not in text, ascii(text)
    text.encode("utf-8")  # no lone surrogate left


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_no_control_character_survives_any_target(text):
    for target, newline in ((visible_text, True), (terminal_text, True), (html_text, True),
                            (markdown_text, False), (latex_text, False)):
        no_raw_control(target(text), newline)
    no_raw_control(terminal_text(text, one_line=True), False)


@given(st.text(st.characters(exclude_categories=("Cc", "Cs"))))
def test_visible_text_leaves_ordinary_text_alone(text):
    text = "".join(c for c in text if not BANNED.match(c))
    assert visible_text(text) == text


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"), ("\x1b[2J", "\\x1b[2J"), ("a\rb", "a\\x0db"), ("\x9b31m", "\\x9b31m"),
    ("\x7f", "\\x7f"), ("\u202eevil", "\\u202eevil"), ("\u2066x\u2069", "\\u2066x\\u2069"), ("\ud83d", "\\ud83d"),
    ("line\nnext", "line\nnext"), ("\\x1b", "\\x1b"), ("😀", "😀"),
])
def test_visible_escapes_as_python_spells_them(raw, shown):
    assert visible_text(raw) == shown


@given(ANY_TEXT)
def test_a_terminal_table_cell_is_one_line(text):
    assert terminal_text(text, one_line=True) == visible_text(text).replace("\n", "\\x0a")
    assert terminal_text(text) == visible_text(text)


# ------------------------------------------------------------------ HTML

class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []
        self.data: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.data.append(data)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_html_reads_back_as_the_visible_text(text):
    escaped = html_text(text)
    assert html.unescape(escaped) == visible_text(text)
    reader = _Reader()
    reader.feed(f'<p title="{escaped}">{escaped}</p><title>{escaped}</title>')
    reader.close()
    assert [tag for tag, _ in reader.tags] == ["p", "title"]  # nothing of the text opened a tag
    assert reader.tags[0][1] == [("title", visible_text(text))]
    assert "".join(reader.data) == visible_text(text) * 2


# ------------------------------------------------------------------ Markdown

_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _rendered_text(source: str) -> tuple[list[str], str]:
    reader = _Reader()
    reader.feed(_MARKDOWN.render(source))
    reader.close()
    return [tag for tag, _ in reader.tags], "".join(reader.data)


def _words(text: str) -> list[str]:
    return text.split()  # Markdown trims and folds whitespace; the words are what a reader reads


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_markdown_renders_as_the_visible_text(text):
    escaped = markdown_text(text)
    shown = visible_text(text).replace("\n", " ")
    for source, tags in (
        (f"{escaped}\n", ["p"]),                                          # a sentence
        (f"- {escaped}\n", ["ul", "li"]),                                 # a list item (the sources)
        (f"### {escaped}\n", ["h3"]),                                     # a heading (a table's title)
        (f"| a |\n|---|\n| {escaped} |\n", ["table", "thead", "tr", "th", "tbody", "tr", "td"]),  # a cell
    ):
        found_tags, found = _rendered_text(source)
        if not shown.strip(" ") and tags == ["p"]:
            tags = []  # a blank line (spaces only: Markdown's blank, not Unicode's) is no paragraph
        assert found_tags == tags, (source, found_tags)
        assert _words(found) == _words(("a " if source.startswith("|") else "") + shown), source


@given(st.floats(allow_nan=False) | st.integers())
def test_markdown_leaves_numbers_alone(number):
    """A table's numbers are most of report.md: none is taken for a list marker ("1.5", "-3", "1e-05")."""
    for text in (f"{number}", f"{number:g}" if isinstance(number, float) else f"{number:,}"):
        assert markdown_text(text) == text


@pytest.mark.parametrize(("raw", "shown"), [
    ("1. first", "1\\. first"), ("2) second", "2\\) second"), ("- item", "\\- item"), ("+ item", "\\+ item"),
    ("---", "\\---"), ("===", "\\==="), ("   1. indented", "1\\. indented"), ("\n- x", "\\- x"),
    ("2024-01-01", "2024-01-01"), ("K=1: strong", "K=1: strong"), ("-0.5", "-0.5"), ("a - b", "a - b"),
])
def test_markdown_escapes_a_list_marker_at_the_start_only(raw, shown):
    assert markdown_text(raw) == shown


@given(ANY_TEXT)
def test_markdown_has_no_unescaped_special(text):
    """Every Markdown special of the output follows a backslash that is not itself escaped."""
    escaped = markdown_text(text)
    i = 0
    while i < len(escaped):
        if escaped[i] == "\\":
            assert escaped[i + 1] in "\\`*_~$[]{}<>&|#-+=.)", ascii(escaped)
            i += 2
            continue
        assert escaped[i] not in "\\`*_~$[]{}<>&|#", ascii(escaped)
        i += 1


# ------------------------------------------------------------------ LaTeX

_LATEX_TOKENS = sorted({
    r"\textbackslash{}", r"\&", r"\%", r"\$", r"\#", r"\_", r"\{", r"\}", r"\textasciitilde{}",
    r"\textasciicircum{}", r"\textless{}", r"\textgreater{}", r"\textbar{}", r"{\ttfamily\char34}", "{[}", "{]}", "{*}",
    "$-$", r"$\approx$", r"$\geq$", r"$\leq$", r"$\pm$", r"$\times$", r"$\infty$", r"\textsuperscript{9}",
    r"\textsubscript{2}", r"\ldots{}"}, key=len, reverse=True)
_LATEX_ACTIVE = set("\\{}$&#^_~%<>|\"[]*")


def latex_pieces(escaped: str) -> list[str]:
    """The output cut into the commands the escaping writes and plain characters; fails on any other special."""
    pieces, i = [], 0
    while i < len(escaped):
        token = next((t for t in _LATEX_TOKENS if escaped.startswith(t, i)), None)
        if token is None:
            assert escaped[i] not in _LATEX_ACTIVE, (ascii(escaped), i)
            token = escaped[i]
        pieces.append(token)
        i += len(token)
    return pieces


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_latex_has_no_unescaped_special(text):
    latex_pieces(latex_text(text))


@given(ANY_TEXT)
def test_latex_characters_are_ascii_or_latin_letters_pdflatex_has(text):
    for piece in latex_pieces(latex_text(text)):
        if len(piece) == 1 and ord(piece) >= 0x80:
            assert 0xA0 <= ord(piece) < 0x180 or piece in "†‡•‰€™←↑→↓", ascii(piece)


@pytest.mark.parametrize(("raw", "tex"), [
    ("50% of k_max ≈ 5 & more", r"50\% of k\_max $\approx$ 5 \& more"),
    ("\x1b]0;t\x07", r"\textbackslash{}x1b{]}0;t\textbackslash{}x07"),
    ("a\nb", "a b"),
    ('<|">', r"\textless{}\textbar{}{\ttfamily\char34}\textgreater{}"),
    ("[0.1, 1]", "{[}0.1, 1{]}"),
    ("café, Müller, Łódź", "café, Müller, Łódź"),
    ("e\u0301", "é"),
    ("中😀ą", r"\textbackslash{}u4e2d\textbackslash{}U0001f600\textbackslash{}u0105"),
    ("gCO₂e ✕ 2", r"gCO\textsubscript{2}e $\times$ 2"),
    (r"\immediate\write18{x}", r"\textbackslash{}immediate\textbackslash{}write18\{x\}"),
])
def test_latex_examples(raw, tex):
    assert latex_text(raw) == tex


# ------------------------------------------------------------------ LaTeX, compiled

def _engine(name: str) -> bool:
    if shutil.which(name) is None:
        return False
    return name != "lualatex" or subprocess.run(  # its OpenType loader (Debian: texlive-luatex)
        ["kpsewhich", "luaotfload-main.lua"], capture_output=True, text=True).stdout.strip() != ""


def _needs(name: str):
    return pytest.mark.skipif(not _engine(name) and os.environ.get("CI") != "true",
                              reason=f"no {name} here (CI installs it)")


# The strings the compile test typesets: the report's own Unicode, each special and control alone,
# the attacks, and strings drawn from all of those and the whole of Unicode (seeded: the same each run).
FIXED = [
    "≈ ≤ ≥ × – — − ∞ ± … ’ “ ” ✕ ⁹ ₂ gCO₂e/kWh", *SPECIALS, *CONTROLS, *BIDI, *SURROGATES, *OTHERS,
    r"\immediate\write18{touch PWNED}", r"\input{/etc/hostname}", r"\def\x{y}\x", "^^5cinput^^7b/etc/hostname^^7d",
    r"\end{document}", r"\\", r"\par", "}{", "$$", "%", "#1", "~~", "\\" * 9, "{" * 30, "[", "*", "\n\n\n",
    "x" * 3000, "é" * 500, "中😀" * 200,
]


def _drawn(count: int) -> list[str]:
    rng = random.Random(34)
    alphabet = [*SPECIALS, *CONTROLS, *BIDI, *SURROGATES, *OTHERS, *"abc XYZ 019"]

    def one() -> str:
        parts = [rng.choice(alphabet) if rng.random() < 0.7 else chr(rng.randrange(0x110000)) for _ in range(rng.randrange(1, 40))]
        return "".join(parts)

    return [one() for _ in range(count)]


def _document(strings: list[str], preamble: str) -> str:
    """Each string in text mode, as a tabular cell (a row's first cell too), and in a caption.

    A caption gets each string's first 40 characters: LaTeX measures a caption on one line first, and
    one wider than TeX's largest dimension (about 3000 typeset characters) stops it ("Dimension too
    large"), whatever its characters.
    """
    body = []
    for i in range(0, len(strings), 10):
        chunk = [latex_text(s) for s in strings[i:i + 10]]
        short = [latex_text(s[:40]) for s in strings[i:i + 10]]
        body.append("\n\n".join(chunk))
        rows = " \\\\\n".join(f"{cell} & {i} & {cell}" for cell in chunk)
        body.append("\\begin{table}[htbp]\\centering\n\\begin{tabular}{lrp{0.3\\linewidth}}\n\\toprule\n"
                    f"{rows} \\\\\n\\bottomrule\n\\end{{tabular}}\n\\caption{{{' '.join(short)}}}\n\\end{{table}}")
        long_rows = " \\\\\n".join(f"{cell} & {cell}" for cell in chunk)
        body.append(f"\\begin{{longtable}}{{lp{{0.5\\linewidth}}}}\n{long_rows} \\\\\n"
                    f"\\caption{{{short[0]}}}\n\\end{{longtable}}")
    return (f"\\documentclass{{article}}\n{preamble}\\usepackage{{booktabs}}\n\\usepackage{{longtable}}\n"
            "\\begin{document}\n\\listoftables\n" + "\n\n".join(body) + "\n\\end{document}\n")


def _compile(engine: str, folder, source: str, *options: str) -> subprocess.CompletedProcess:
    (folder / "doc.tex").write_text(source, encoding="utf-8")
    done = None
    for _ in range(2):  # twice: the list of tables reads the captions back from the .aux
        done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", *options, "doc.tex"],
                              cwd=folder, capture_output=True, text=True, errors="replace", timeout=300)
        if done.returncode:
            break
    return done


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "preamble"), [
    pytest.param("pdflatex", "", marks=_needs("pdflatex"), id="pdflatex-OT1"),
    pytest.param("pdflatex", "\\usepackage[T1]{fontenc}\n\\usepackage{lmodern}\n", marks=_needs("pdflatex"), id="pdflatex-T1-lmodern"),
    pytest.param("lualatex", "", marks=_needs("lualatex"), id="lualatex"),
])
def test_hostile_strings_compile(engine, preamble, tmp_path):
    strings = FIXED + _drawn(300)
    done = _compile(engine, tmp_path, _document(strings, preamble), "-no-shell-escape")
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert (tmp_path / "doc.pdf").read_bytes().startswith(b"%PDF")
    assert "Missing character" not in log  # every character typeset, none dropped (LuaLaTeX only warns)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.slow
@pytest.mark.parametrize("engine", [pytest.param("pdflatex", marks=_needs("pdflatex")),
                                    pytest.param("lualatex", marks=_needs("lualatex"))])
def test_escaped_text_runs_nothing_under_shell_escape(engine, tmp_path):
    """With \\write18 allowed, the escaped attacks write no file and read none; the same text raw does both
    (which shows this test can fail)."""
    secret = tmp_path / "secret.tex"
    secret.write_text("SECRET\n")
    # A shell command each engine runs under -shell-escape: LuaTeX has no \write18 of its own.
    run = r"\immediate\write18{touch PWNED}" if engine == "pdflatex" else r'\directlua{os.execute("touch PWNED")}'
    attacks = [run, f"\\input{{{secret}}}", r"\input{/etc/hostname}", r"\immediate\write18{touch PWNED}",
               r'\directlua{os.execute("touch PWNED")}']
    (tmp_path / "escaped").mkdir()
    (tmp_path / "raw").mkdir()
    body = "\n\n".join(latex_text(a) for a in attacks)
    done = _compile(engine, tmp_path / "escaped", f"\\documentclass{{article}}\n\\begin{{document}}\n{body}\n\\end{{document}}\n",
                    "-shell-escape", "-recorder")
    assert done.returncode == 0, done.stdout[-3000:]
    read = (tmp_path / "escaped" / "doc.fls").read_text()
    assert not (tmp_path / "escaped" / "PWNED").exists()
    assert str(secret) not in read and "/etc/hostname" not in read

    raw = "\n\n".join(attacks[:2])  # the engine's own command first: another one may stop it
    _compile(engine, tmp_path / "raw", f"\\documentclass{{article}}\n\\begin{{document}}\n{raw}\n\\end{{document}}\n",
             "-shell-escape", "-recorder")
    assert (tmp_path / "raw" / "PWNED").exists() and str(secret) in (tmp_path / "raw" / "doc.fls").read_text()


@pytest.mark.parametrize("encoding, expected", [
    ("ascii", "n <= 28 x 2 ... caf\\xe9 +/- -- -+- \\u4e2d\n"),
    ("latin-1", "n <= 28 \u00d7 2 ... caf\u00e9 \u00b1 -- -+- \\u4e2d\n"),  # what Latin-1 holds is kept
    ("utf-8", "n \u2264 28 \u00d7 2 \u2026 caf\u00e9 \u00b1 \u2014 \u2500\u253c\u2500 \u4e2d\n"),
])
def test_a_stream_writes_what_its_encoding_lacks_in_ascii(encoding, expected):
    """Issue 35 item 6: before, a glyph its encoding lacked stopped the command (UnicodeEncodeError)."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict")
    with fitted_to_encoding(stream):
        print("n \u2264 28 \u00d7 2 \u2026 caf\u00e9 \u00b1 \u2014 \u2500\u253c\u2500 \u4e2d", file=stream)
        stream.flush()
    assert raw.getvalue().decode(encoding) == expected
    assert stream.errors == "strict"  # restored after the block
