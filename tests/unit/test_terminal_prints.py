"""Every line a command prints goes through the terminal's one owner, showwork.escaping.terminal_text (issue 34 item 2).

A check of the source, so that a new ``print`` of a user's value cannot skip it: in the command line
(``showwork/cli.py``, ``showwork/commands/``, ``showwork/run/``, and ``showwork ui``'s ``tracking/ui.py``) each ``print`` prints a constant, a
:func:`~showwork.escaping.terminal_text` of its text, JSON (``json.dumps`` escapes every control
character and, ASCII only, every bidi control), or lines of ``table_lines`` (which escapes each
cell); the few others print a file format of their own and are listed below with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import showwork

ROOT = Path(showwork.__file__).parent
PLACES = [ROOT / "cli.py", *sorted((ROOT / "commands").glob("*.py")), *sorted((ROOT / "run").glob("*.py")),
          ROOT / "tracking" / "ui.py"]  # `showwork ui` prints the store and each search's runs table

# (file, the printed expression's source): a format whose own writer escapes, not the terminal's text.
OWN_FORMAT = {
    # YAML for `showwork search` to read back: PyYAML writes C0 and C1 controls as escapes ("\e");
    # terminal_text would turn a bidi control of a plain scalar into other text.
    ("commands/validate.py", "resolved_yaml(spec)"),
    # best --yaml: the same, its comment lines (which quote the metric's name) through terminal_text (issue 35
    # item 6: they were printed raw).
    ("commands/best.py", "''.join((terminal_text(line) if line.startswith('#') else line for line in lines))"),
}


def _safe(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):  # an f-string of constants only
        return all(isinstance(part, ast.Constant) for part in node.values)
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name in ("terminal_text", "json.dumps"):
            return True
    return any(isinstance(sub, ast.Call) and ast.unparse(sub.func) == "table_lines" for sub in ast.walk(node))


def unescaped_prints(source: str, where: str) -> list[str]:
    """``where:line: expression`` of each print in ``source`` whose text is none of the above."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" and node.args:
            text = node.args[0]
            if not _safe(text) and (where, ast.unparse(text)) not in OWN_FORMAT:
                found.append(f"{where}:{node.lineno}: {ast.unparse(text)[:100]}")
    return found


def test_every_print_of_the_command_line_escapes_for_the_terminal():
    found = [line for path in PLACES
             for line in unescaped_prints(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not found, "prints that do not pass their text through showwork.escaping.terminal_text:\n" + "\n".join(found)


def test_the_check_sees_a_raw_print():
    source = ('print(f"search {name}")\nprint(terminal_text(f"search {name}"))\nprint("constant")\nprint(f"no {{value}}")\n'
              'print(json.dumps(x))\nprint("\\n".join(table_lines(h, rows)))\nprint(name, file=sys.stderr)\n'
              "print(resolved_yaml(spec))\n")
    assert unescaped_prints(source, "commands/x.py") == ["commands/x.py:1: f'search {name}'", "commands/x.py:7: name",
                                                         "commands/x.py:8: resolved_yaml(spec)"]
    assert unescaped_prints("print(resolved_yaml(spec))\n", "commands/validate.py") == []
