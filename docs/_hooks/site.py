"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks:``).

Two jobs, so that nothing on the site is written twice:

- the CLI reference (``reference/cli.md``) is generated at build time from the parser that
  ``showwork`` itself runs (:func:`showwork.cli.build_parser`): each command's usage, description and
  every option with its value, default and help, replacing the page's ``<!-- cli-reference -->`` line;
- pages kept beside the code they describe (``CHANGELOG.md``, ``docker/README.md``, ``k8s/README.md``,
  ``experiments/README.md`` and its figures) are added to the site as they are, not copied into ``docs/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mkdocs.structure.files import File, Files

from showwork.cli import build_parser

REPO_ROOT = Path(__file__).resolve().parents[2]

CLI_MARKER = "<!-- cli-reference -->"

# Files outside docs/ that the site shows: path in the repository -> path on the site.
OUTSIDE_PAGES = {
    "CHANGELOG.md": "changelog.md",
    "docker/README.md": "how-to/docker.md",
    "k8s/README.md": "how-to/kuberay.md",
    "experiments/README.md": "experiments/README.md",
}
# The figures experiments/README.md shows, at the same relative paths beside it.
OUTSIDE_FIGURES = "experiments/results/*/*.png"


def on_files(files: Files, config) -> Files:
    outside = dict(OUTSIDE_PAGES)
    outside.update({str(p.relative_to(REPO_ROOT)): str(p.relative_to(REPO_ROOT)) for p in REPO_ROOT.glob(OUTSIDE_FIGURES)})
    for source, site_path in outside.items():
        files.append(File.generated(config, site_path, abs_src_path=str(REPO_ROOT / source)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    if CLI_MARKER not in markdown:
        return markdown
    return markdown.replace(CLI_MARKER, cli_reference(build_parser()))


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """The Markdown of every command of ``parser``: usage, description, and a table of its options.

    Read from the parser's actions, the same objects ``showwork COMMAND --help`` prints, so the page
    cannot list an option the command lacks or miss one it has (``tests/deploy/test_docs_site.py``).
    """
    lines = ["## `showwork`", "", parser.description or "", "", "```text", parser.format_usage().strip(), "```", ""]
    lines += _options_table(parser)
    for name, command, summary in subcommands(parser):
        lines += [f"## `showwork {name}` {{#showwork-{name}}}", "", f"*{_escape(summary)}*", ""]
        if command.description:
            lines += [_escape(command.description), ""]
        lines += ["```text", command.format_usage().strip(), "```", ""]
        lines += _options_table(command)
    return "\n".join(lines) + "\n"


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """``(name, parser, one-line help)`` of each command, in the order ``showwork --help`` lists them."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out += [(name, command, summaries.get(name, "")) for name, command in action.choices.items()]
    return out


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        names = ", ".join(f"`{option}`" for option in action.option_strings) or f"`{action.metavar or action.dest}`"
        help_text = formatter._expand_help(action) if action.help else ""
        notes = []
        if action.required and action.option_strings:
            notes.append("required")
        if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
            notes.append("repeatable" if isinstance(action, argparse._AppendAction) else "one or more")
        rows.append(f"| {names} | {_value(action)} | {_default(action)} | {_escape(help_text)}"
                    f"{' (' + ', '.join(notes) + ')' if notes else ''} |")
    if not rows:
        return []
    return ["| option | value | default | what it does |", "|---|---|---|---|", *rows, ""]


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return " \\| ".join(f"`{choice}`" for choice in action.choices)
    return f"`{action.metavar or action.dest.upper()}`"


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return f"`{action.default}`"


def _escape(text: str) -> str:
    """Text for a Markdown table cell or paragraph: no cell breaks, no stray markup."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")
