"""The search-space file as YAML 1.2 with positions: strict, safe, every value with its line and column.

See :mod:`showwork.space` for what is read and what is refused."""


from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from showwork.constants import INT64_MAX
from showwork.errors import InputError, show_value
from showwork.files import read_regular_file
from showwork.space.errors import Located, Marks, SpecError, position
from showwork.values import scalar_text

MAX_FILE_BYTES = 1 << 20  # a search space is a page of YAML; refuse anything over 1 MiB
MAX_DEPTH = 32  # nesting levels of mappings and lists



# --- YAML with positions -------------------------------------------------------------------


# Scalars are read by the YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution):
# null, true/false (three spellings each), decimal, 0o-octal and 0x-hex integers, and floats (``1e-4``
# is a float, ``.inf``/``.nan`` are refused later as not finite); everything else is text. A plain
# scalar that YAML 1.1 (PyYAML's default) reads differently -- ``no``/``yes``/``on``/``off``/``y``/``n``,
# ``010`` (octal 8), ``1:30`` (sexagesimal 90), ``1_000``, ``0b101``, ``2020-01-01`` -- is refused as
# ambiguous with both readings, so no file means one thing here and another to a 1.1 reader.
_STR_TAG, _INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL_TAG, _NULL_TAG = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_CORE_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_CORE_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_CORE_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_CORE_RESOLVERS = ((_NULL_TAG, _CORE_NULL), (_BOOL_TAG, _CORE_BOOL), (_INT_TAG, _CORE_INT), (_FLOAT_TAG, _CORE_FLOAT))
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")  # 010: octal 8 in YAML 1.1, 10 in YAML 1.2
_YAML11_YES_NO = re.compile(r"^(?:y|Y|n|N)$")  # YAML 1.1 booleans that PyYAML does not implement
_MAX_NUMBER_CHARS = 400  # longer numerals are refused before int() or float() sees them


def _install_core_resolvers(cls: type, extra: Iterable[tuple[str, Any]] = ()) -> None:
    """Replace ``cls``'s implicit resolvers by the core schema's, then ``extra``, tried in that order.

    PyYAML indexes resolvers by the scalar's first character; every regexp is filed under every
    character that can begin a match of any of them (those of the core schema and of YAML 1.1).
    """
    firsts = {*"~nNtTfFyYoO-+0123456789.", "", *(k for k in yaml.SafeLoader.yaml_implicit_resolvers if k is not None)}
    table: dict[Any, list] = {}
    for tag, regexp in (*_CORE_RESOLVERS, *extra):
        for first in sorted(firsts):
            table.setdefault(first, []).append((tag, regexp))
    cls.yaml_implicit_resolvers = table


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that resolves plain scalars by the YAML 1.2 core schema and refuses aliases before expanding any.

    Scalars are constructed by :func:`_scalar`, not by PyYAML's constructors (whose YAML 1.1
    readings and failures on explicit tags such as ``!!bool maybe`` are what this replaces).
    """

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not allowed in a search space; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def compose_scalar_node(self, anchor):  # noqa: D102 - PyYAML hook
        event = self.peek_event()
        explicit = event.tag not in (None, "!")
        node = super().compose_scalar_node(anchor)
        node.explicit_tag = explicit  # only an untagged plain scalar is checked for YAML 1.1 readings
        return node


class SpecDumper(yaml.SafeDumper):
    """``SafeDumper`` that quotes every text :class:`_Loader` or a YAML 1.1 reader would not read as that text; no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_install_core_resolvers(_Loader)
# The dumper quotes a string when any resolver claims it: the core schema's first (so numbers and
# booleans are written plain), then YAML 1.1's (``no``, ``1:30``, dates), ``y``/``n`` and ``010``.
_install_core_resolvers(
    SpecDumper,
    [
        *((tag, regexp) for resolvers in yaml.SafeLoader.yaml_implicit_resolvers.values() for tag, regexp in resolvers),
        (_BOOL_TAG, _YAML11_YES_NO),
        (_INT_TAG, _LEADING_ZERO),
    ],
)


def _yaml11_reading(text: str) -> Any:
    """What YAML 1.1 (PyYAML's resolvers and constructors) makes of a plain scalar; ``text`` itself if text.

    Returns a ``_Unreadable`` description when PyYAML would fail on it.
    """
    if _YAML11_YES_NO.match(text):
        return text in ("y", "Y")
    resolvers = yaml.SafeLoader.yaml_implicit_resolvers
    candidates = resolvers.get(text[:1] if text else "", []) + resolvers.get(None, [])
    tag = next((tag for tag, regexp in candidates if regexp.match(text)), _STR_TAG)
    if tag == _STR_TAG:
        return text
    constructor = yaml.constructor.SafeConstructor.yaml_constructors.get(tag)
    try:
        return constructor(yaml.constructor.SafeConstructor(), ScalarNode(tag, text))  # type: ignore[misc]
    except Exception:  # PyYAML's own failure on its own reading (e.g. the ``=`` value tag)
        return _Unreadable(tag)


class _Unreadable:
    def __init__(self, tag: str):
        self.tag = tag


def _reading_text(value: Any) -> str:
    """A YAML reading in words, for the ambiguity message."""
    if isinstance(value, _Unreadable):
        return f"a malformed !!{value.tag.rpartition(':')[2]}"
    if isinstance(value, str):
        return f"the text {json.dumps(value, ensure_ascii=False)}"
    if isinstance(value, bool) or value is None:
        return _reading_yaml(value)
    if isinstance(value, (int, float)):
        return repr(value)
    return f"a {type(value).__name__}"  # date, datetime


def _reading_yaml(value: Any) -> str | None:
    """How to write a reading so that both YAML versions agree, or None when it is no JSON value."""
    if isinstance(value, str):
        return f"{json.dumps(value, ensure_ascii=False)} in quotes"
    if value is None or isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return scalar_text(value)  # null, true/false, a number
    return None


def _same_reading(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _ambiguity(text: str, core: Any) -> str | None:
    """The message for a plain scalar that YAML 1.1 and YAML 1.2 read differently, or None."""
    old = _yaml11_reading(text)
    if isinstance(old, str) and not _LEADING_ZERO.match(text):
        return None  # 1.1 reads text: 1.2's reading (e.g. 1e-4 as a number) is what the user wrote
    if not isinstance(old, str) and _same_reading(old, core):
        return None
    fixes = [fix for fix in (_reading_yaml(old), _reading_yaml(core)) if fix is not None]
    unsupported = " (date values are not supported)" if type(old).__name__ in ("date", "datetime") else ""
    return (
        f"{text} is ambiguous: YAML 1.1 reads it as {_reading_text(old)}{unsupported}, YAML 1.2 as"
        f" {_reading_text(core)}; write {' or '.join(fixes)}"
    )


def _scalar(node: ScalarNode) -> Any:
    """A scalar node as a JSON value by the YAML 1.2 core schema; a ``ValueError`` says why it cannot be one."""
    text, tag = node.value, node.tag
    if tag == _STR_TAG:
        return text
    if tag not in (_NULL_TAG, _BOOL_TAG, _INT_TAG, _FLOAT_TAG):
        raise ValueError(f"YAML tag {tag} is not allowed in a search space")
    shown = show_value(text, as_yaml=True)
    if tag == _NULL_TAG:
        if not _CORE_NULL.match(text):
            raise ValueError(f"!!null {shown} is not null (write null, ~ or nothing)")
        return None
    if tag == _BOOL_TAG:
        if not _CORE_BOOL.match(text):
            raise ValueError(f"!!bool {shown} is not a boolean (write true or false)")
        return text.lower() == "true"
    if tag == _INT_TAG and not _CORE_INT.match(text):
        raise ValueError(f"!!int {shown} is not an integer (YAML 1.2: decimal digits, 0o octal or 0x hex)")
    if tag == _FLOAT_TAG and not (_CORE_FLOAT.match(text) or _CORE_INT.match(text)):
        raise ValueError(f"!!float {shown} is not a number")
    if len(text) > _MAX_NUMBER_CHARS:
        raise ValueError(f"number too long: {text[:20]}... ({len(text)} characters)")
    if _CORE_INT.match(text):
        base = 8 if text.startswith("0o") else 16 if text.startswith("0x") else 10
        value = int(text[2:] if base != 10 else text, base)
        return float(value) if tag == _FLOAT_TAG else value
    special = text.lstrip("+-").lower()  # .inf, -.Inf, .NaN: refused later as not finite
    if special in (".inf", ".nan"):
        return math.nan if special == ".nan" else -math.inf if text.startswith("-") else math.inf
    return float(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(text: str) -> str:
    """Refuse a lone surrogate (``"\\ud800"`` escapes to one): it is not Unicode text and cannot be encoded."""
    found = _SURROGATE.search(text)
    if found:
        raise ValueError(
            f"contains a lone surrogate \\u{ord(found.group()):04x}, which is not a Unicode character"
            " (it cannot be written as UTF-8)"
        )
    return text


class FlowMapping(dict):
    """A mapping written in flow style (``{distribution: uniform, low: 0.0, high: 1.0}``)."""


SpecDumper.add_representer(FlowMapping, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True))


_MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _to_python(loader: _Loader, node: Any, path: tuple, marks: Marks, depth: int = 0) -> Any:
    """Turn a composed node into JSON values, recording the marks of every key path."""
    if depth > MAX_DEPTH:
        raise Located(path, f"nested more than {MAX_DEPTH} levels deep", mark=node.start_mark)
    if not isinstance(node, ScalarNode) and node.tag not in (_MAP_TAG, _SEQ_TAG):
        raise Located(path, f"YAML tag {node.tag} is not allowed in a search space", mark=node.start_mark)
    if isinstance(node, MappingNode):
        return _mapping_to_python(loader, node, path, marks, depth)
    if isinstance(node, SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            marks[path + (i,)] = (item.start_mark, item.start_mark)
            items.append(_to_python(loader, item, path + (i,), marks, depth + 1))
        return items
    return _scalar_value(node, path, ambiguity=True)


def _mapping_to_python(loader: _Loader, node: MappingNode, path: tuple, marks: Marks, depth: int) -> dict[str, Any]:
    """A mapping node as a dict of text keys (see :func:`_to_python`); merge keys and duplicate keys refused."""
    out: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            raise Located(path, "keys must be text, not a list or mapping", mark=key_node.start_mark)
        if key_node.value == "<<" and key_node.style is None and not key_node.explicit_tag:
            # YAML 1.1 merges the mapping in; YAML 1.2 reads a key "<<": refused as ambiguous
            raise Located(path, "YAML merge keys (<<) are not allowed in a search space", mark=key_node.start_mark)
        key = _scalar_value(key_node, path, ambiguity=False)
        if not isinstance(key, str):
            raise Located(
                path, f"keys must be text (got {show_value(key, as_yaml=True)}); put the key in quotes", mark=key_node.start_mark
            )
        here = path + (key,)
        if key in out:
            raise Located(
                here, f"duplicate key {key!r} (lines {lines[key]} and {key_node.start_mark.line + 1})", mark=key_node.start_mark
            )
        lines[key] = key_node.start_mark.line + 1
        marks[here] = (key_node.start_mark, value_node.start_mark)
        out[key] = _to_python(loader, value_node, here, marks, depth + 1)
    return out


def _scalar_value(node: ScalarNode, path: tuple, ambiguity: bool) -> Any:
    """A scalar node as a JSON value (see :func:`_scalar`); ``ambiguity``: refuse untagged plain scalars YAML 1.1 reads otherwise."""
    try:
        value = _scalar(node)
        if isinstance(value, str):
            _check_text(value)
    except ValueError as error:
        raise Located(path, str(error), mark=node.start_mark) from None
    if ambiguity and node.style is None and not node.explicit_tag:
        message = _ambiguity(node.value, value)
        if message is not None:
            raise Located(path, message, mark=node.start_mark)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) > INT64_MAX:
            digits = node.value if len(node.value) <= 30 else f"{node.value[:20]}... ({len(node.value)} characters)"
            raise Located(path, f"integer too large: {digits} (must fit in 64 bits)", mark=node.start_mark)
        return value
    if not math.isfinite(value):
        what = "too large (it overflows to infinity)" if re.search(r"[0-9]", node.value) else "not finite"
        raise Located(path, f"number {node.value} is {what}; numbers must be finite", mark=node.start_mark)
    return value


def read_spec_text(path: Path, shown: str) -> str:
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES, "search space (a page of YAML)")
    except InputError as error:
        raise SpecError(str(error), shown) from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise SpecError(f"{shown}: is a binary file (NUL byte at offset {nul}), not YAML text", shown)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SpecError(
            f"{shown}: is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start})", shown
        ) from None
    return text


def compose_yaml(text: str, shown: str) -> tuple[Any, Marks]:
    """YAML text -> (JSON value, marks); every YAML problem becomes a one-line SpecError."""
    loader = None
    marks: Marks = {}
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            raise SpecError(
                f"{shown}: is empty; a search space needs at least name, family, metric, num_trials and space", shown
            )
        value = _to_python(loader, node, (), marks)
    except Located as problem:
        raise problem.error(shown) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        parts = [str(part) for part in (error.context, error.problem) if part]
        problem = " ".join("; ".join(parts or ["malformed YAML"]).split())
        where = f"{shown}:{position(mark)}" if mark is not None else shown
        raise SpecError(
            f"{where}: invalid YAML: {problem}",
            shown,
            mark.line + 1 if mark is not None else None,
            mark.column + 1 if mark is not None else None,
        ) from None
    except yaml.reader.ReaderError as error:  # a control character or other unprintable character
        line = text.count("\n", 0, error.position) + 1
        column = error.position - text.rfind("\n", 0, error.position)
        raise SpecError(
            f"{shown}:{line}:{column}: invalid YAML: unacceptable character #x{error.character:04x} ({error.reason})",
            shown,
            line,
            column,
        ) from None
    except yaml.YAMLError as error:
        raise SpecError(f"{shown}: invalid YAML: {' '.join(str(error).split())}", shown) from None
    except RecursionError:
        raise SpecError(f"{shown}: invalid YAML: nested too deeply", shown) from None
    finally:
        if loader is not None:
            loader.dispose()
    return value, marks


