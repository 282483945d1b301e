"""The ToolRenderer: one list of ``ToolSpec`` shown to a model in six formats.

Native tool APIs take JSON (``ollama``, ``openai``, ``anthropic``); small models without a
tool template read a manifest in the system prompt instead (``text``, ``concise``,
``qwen-xml``). Schemas may come from MCP servers, so nothing here trusts their shape:
``$ref`` is resolved locally with a recursion guard, garbage is skipped, nothing raises.
Output is deterministic because Ollama reuses its prompt cache only while the system
prompt and tool definitions stay byte-identical.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from iris_voice.tools.registry import ToolSpec

FORMATS = ("ollama", "openai", "anthropic", "text", "concise", "qwen-xml")
"""Every format ``render`` knows."""
TEXT_FORMATS = ("text", "concise", "qwen-xml")
"""Formats that produce a system-prompt manifest rather than a JSON tools array."""

CALL_SYNTAX = '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>'
"""How a text-mode model must write a call; textcalls.py parses exactly this first."""

SYSTEM_TOOL_INSTRUCTIONS = {
    "text": (
        f"When a tool is needed, reply with exactly {CALL_SYNTAX} and nothing else. "
        "Use only the tools and parameters listed above. When no tool is needed, answer directly."
    ),
    "concise": 'To use a tool, reply only: <tool_call>{"name": "...", "arguments": {...}}</tool_call>',
    "qwen-xml": (
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    ),
}
"""The call instruction that ends each text manifest, by format."""

# Qwen2.5's chat template says exactly this; the model was trained on it.
_QWEN_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_MAX_DEPTH = 8  # nesting shown to a model; deeper schemas are noise for a voice assistant
_CONCISE_DEPTH = 3
_CONCISE_DESC = 120
_TEXT_DESC = 600
_MAX_ENUM = 12
_BOUNDS = (
    ("minimum", "maximum", ""),
    ("minLength", "maxLength", "length "),
    ("minItems", "maxItems", "items "),
)


def _one_line(value: Any, limit: int = 0) -> str:
    """Collapse whitespace (descriptions may hold newlines) and cut to ``limit`` chars."""
    text = " ".join(str(value).split()) if value is not None else ""
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _lit(value: Any) -> str:
    """A JSON literal for enum values, consts and defaults, kept short."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return _one_line(text, 40)


def _pointer(root: Any, ref: str) -> Any:
    """Follow a local JSON pointer (``#/$defs/Name``); None when it leads nowhere."""
    if not ref.startswith("#"):
        return None  # remote refs would need the network: IRIS is offline
    node = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _deref(node: Any, root: Any, seen: tuple[str, ...]) -> tuple[Any, tuple[str, ...], str | None]:
    """Resolve ``$ref`` chains; returns (schema, refs on the path, name if recursive)."""
    for _ in range(32):
        if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
            return node, seen, None
        ref = node["$ref"]
        name = ref.rsplit("/", 1)[-1] or "object"
        if ref in seen:
            return node, seen, name
        target = _pointer(root, ref)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **siblings} if isinstance(target, dict) else siblings
        seen = (*seen, ref)
    return {}, seen, None


def schema_type_label(schema: Any, root: Any = None, _seen: tuple[str, ...] = (), _depth: int = 0) -> str:
    """A short type for a schema: ``string``, ``array of integer``, ``"a" | "b"``, ``any``.

    ``root`` holds the ``$defs`` that ``$ref`` points into (defaults to ``schema``).
    """
    root = schema if root is None else root
    node, seen, recursive = _deref(schema, root, _seen)
    if recursive:
        return recursive
    if not isinstance(node, dict) or _depth > _MAX_DEPTH:
        return "any"
    if "const" in node:
        return _lit(node["const"])
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        more = " | …" if len(enum) > _MAX_ENUM else ""
        return " | ".join(_lit(v) for v in enum[:_MAX_ENUM]) + more
    for key in ("anyOf", "oneOf", "allOf"):
        alts = node.get(key) if isinstance(node.get(key), list) else []
        alts = [a for a in alts if isinstance(a, dict | bool)]
        if alts:
            labels = list(dict.fromkeys(schema_type_label(a, root, seen, _depth + 1) for a in alts))
            return " | ".join(labels) if key != "allOf" else " & ".join(labels)
    types = node.get("type")
    if isinstance(types, list):
        words = [_type_word(t, node, root, seen, _depth) for t in types if isinstance(t, str)]
        return " | ".join(dict.fromkeys(words)) or "any"
    if isinstance(types, str):
        return _type_word(types, node, root, seen, _depth)
    if isinstance(node.get("properties"), dict):
        return "object"
    if "items" in node:
        return _type_word("array", node, root, seen, _depth)
    return "any"


def _type_word(word: str, node: dict[str, Any], root: Any, seen: tuple[str, ...], depth: int) -> str:
    """One JSON Schema type name; arrays name their item type."""
    if word != "array" or not isinstance(node.get("items"), dict):
        return word
    inner = schema_type_label(node["items"], root, seen, depth + 1)
    if inner == "any":
        return "array"
    return f"array of ({inner})" if "|" in inner else f"array of {inner}"


def _constraints(node: Any) -> list[str]:
    """Format, numeric bounds, lengths and pattern, each as a few characters."""
    if not isinstance(node, dict):
        return []
    out = []
    if isinstance(node.get("format"), str):
        out.append(_one_line(node["format"], 30))

    def num(key: str) -> str | None:
        value = node.get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return _lit(value) if ok and math.isfinite(value) else None

    for lo_key, hi_key, unit in _BOUNDS:
        lo, hi = num(lo_key), num(hi_key)
        if lo is not None or hi is not None:
            out.append(unit + (f"{lo}..{hi}" if lo and hi else f">= {lo}" if lo else f"<= {hi}"))
    for key, sign in (("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
        if num(key) is not None:
            out.append(f"{sign} {num(key)}")
    if isinstance(node.get("pattern"), str):
        out.append("pattern " + _one_line(node["pattern"], 40))
    if "default" in node:
        out.append("default " + _lit(node["default"]))
    return out


def _children(node: Any, root: Any, seen: tuple[str, ...]) -> tuple[Any, tuple[str, ...], str]:
    """The object whose properties nest under a parameter: itself, or its array items."""
    if isinstance(node, dict) and isinstance(node.get("properties"), dict):
        return node, seen, ""
    items = node.get("items") if isinstance(node, dict) else None
    items, seen, recursive = _deref(items, root, seen)
    if not recursive and isinstance(items, dict) and isinstance(items.get("properties"), dict):
        return items, seen, "[]"
    return None, seen, ""


def _params(
    node: Any, root: Any, seen: tuple[str, ...], depth: int, prefix: str = ""
) -> Iterable[tuple[int, str, str, str, str]]:
    """Yield (depth, path prefix, name, "type, required, bounds", description) per property."""
    node, seen, recursive = _deref(node, root, seen)
    if recursive or not isinstance(node, dict) or not isinstance(node.get("properties"), dict):
        return
    required = node.get("required") if isinstance(node.get("required"), list) else []
    for name, sub in node["properties"].items():
        if not isinstance(sub, dict) and sub is not True:
            continue  # garbage (or `false`: nothing allowed) where a schema should be
        resolved, sub_seen, rec = _deref(sub, root, seen)
        label = schema_type_label(sub, root, seen, depth)
        need = "required" if name in required else "optional"
        facts = ", ".join([label, need, *_constraints(resolved)])
        desc = (resolved.get("description") or resolved.get("title")) if isinstance(resolved, dict) else ""
        yield depth, prefix, _one_line(name, 60), facts, _one_line(desc) if isinstance(desc, str) else ""
        if rec or depth >= _MAX_DEPTH:
            continue
        child, child_seen, marker = _children(resolved, root, sub_seen)
        if child is not None:
            yield from _params(child, root, child_seen, depth + 1, f"{prefix}{_one_line(name, 60)}{marker}.")


def _text_block(spec: ToolSpec) -> str:
    """One tool in the ``text`` manifest, nested parameters indented."""
    params = spec.parameters if isinstance(spec.parameters, dict) else {}
    lines = [f"### {_one_line(spec.name)}", _one_line(spec.description, _TEXT_DESC) or "(no description)"]
    rows = list(_params(params, params, (), 0))
    lines.append("Parameters:" if rows else "Parameters: none")
    for depth, _, name, facts, desc in rows:
        tail = f": {_one_line(desc, _TEXT_DESC)}" if desc else ""
        lines.append(f"{'  ' * depth}- {name} ({facts}){tail}")
    return "\n".join(lines)


def _concise_block(spec: ToolSpec) -> str:
    """One line for the tool, one per parameter (nested ones as dotted names)."""
    params = spec.parameters if isinstance(spec.parameters, dict) else {}
    head = _one_line(spec.description, _CONCISE_DESC)
    lines = [f"{_one_line(spec.name)}: {head}" if head else _one_line(spec.name)]
    for depth, path, name, facts, desc in _params(params, params, (), 0):
        if depth < _CONCISE_DEPTH:
            facts = _one_line(facts, 80)
            tail = f": {_one_line(desc, _CONCISE_DESC)}" if desc else ""
            lines.append(f"  {path}{name} ({facts}){tail}")
    return "\n".join(lines)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A plain-JSON copy of a value: odd keys dropped, odd values stringified, cycles cut."""
    if depth > 64:
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v, depth + 1) for k, v in value.items() if isinstance(k, str)}
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # NaN is not JSON
    return value if value is None or isinstance(value, str | int | bool) else str(value)


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) or value is True


def _clean(node: Any, root: Any, inline: bool, seen: tuple[str, ...] = (), depth: int = 0) -> Any:
    """A JSON-only copy of a schema without garbage where a schema must be.

    Ollama rejects a whole request whose tool has ``"properties": {"x": 5}``. With
    ``inline``, each local ``$ref`` is replaced by its definition, since small models
    cannot follow a pointer into ``$defs``; a recursive one becomes a named object.
    """
    if inline:
        node, seen, recursive = _deref(node, root, seen)
        if recursive:
            return {"type": "object", "description": f"a {recursive} (recursive)"}
    if not isinstance(node, dict) or depth > (_MAX_DEPTH * 2 if inline else 64):
        return {}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if not isinstance(key, str) or (inline and key in ("$defs", "definitions")):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {
                str(n): _clean(v, root, inline, seen, depth + 1) for n, v in value.items() if _is_schema(v)
            }
        elif (key in _SCHEMA_LISTS or key == "items") and isinstance(value, list):
            out[key] = [_clean(v, root, inline, seen, depth + 1) for v in value if _is_schema(v)]
        elif key == "items" and _is_schema(value):
            out[key] = _clean(value, root, inline, seen, depth + 1)
        elif key not in _SCHEMA_MAPS and key not in _SCHEMA_LISTS and key != "items":
            out[key] = _jsonable(value)
    return out


def normalize_parameters(parameters: Any, inline: bool = False) -> dict[str, Any]:
    """A parameters schema every API accepts: an object with a ``properties`` dict.

    A top-level ``$ref`` (pydantic v1 style) is resolved so the root is the object itself;
    ``inline`` also resolves every nested one (see ``_clean``).
    """
    top, _, recursive = _deref(parameters, parameters, ())
    kind = top.get("type", "object") if isinstance(top, dict) else None
    if recursive or not (kind == "object" or isinstance(kind, list) and "object" in kind):
        return {"type": "object", "properties": {}}  # a tool's arguments are always an object
    defs = {k: parameters[k] for k in ("$defs", "definitions") if k in parameters and k not in top}
    out = _clean({**top, **defs}, parameters, inline)
    out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    required = out.pop("required", None)
    if isinstance(required, list):
        required = [r for r in required if isinstance(r, str) and r in out["properties"]]
        if required:
            out["required"] = required
    return out


def _function(spec: ToolSpec, inline: bool) -> dict[str, Any]:
    """The name/description/parameters triple that every JSON format wraps."""
    return {
        "name": str(spec.name),
        "description": str(spec.description or ""),
        "parameters": normalize_parameters(spec.parameters, inline),
    }


def render(specs: Iterable[ToolSpec], fmt: str) -> list[dict[str, Any]] | str:
    """Render tools in ``fmt``: a JSON-able list for the APIs, a string for text formats."""
    specs = list(specs)
    if fmt in ("ollama", "openai"):
        # Ollama's model templates read the schema as text, so resolve refs for it.
        return [{"type": "function", "function": _function(s, fmt == "ollama")} for s in specs]
    if fmt == "anthropic":
        return [
            {"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
            for f in (_function(s, False) for s in specs)
        ]
    if fmt == "qwen-xml":
        lines = "".join(
            "\n" + json.dumps({"type": "function", "function": _function(s, True)}, ensure_ascii=False)
            for s in specs
        )
        return f"{_QWEN_HEADER}{lines}\n</tools>\n\n{SYSTEM_TOOL_INSTRUCTIONS['qwen-xml']}"
    if fmt == "text":
        blocks = "\n\n".join(_text_block(s) for s in specs) or "(no tools)"
        return f"# Tools\n\nYou can call these tools:\n\n{blocks}\n\n{SYSTEM_TOOL_INSTRUCTIONS['text']}"
    if fmt == "concise":
        lines = "\n".join(_concise_block(s) for s in specs) or "(no tools)"
        return f"Tools:\n{lines}\n{SYSTEM_TOOL_INSTRUCTIONS['concise']}"
    raise ValueError(f"unknown tool format {fmt!r}; expected one of {', '.join(FORMATS)}")


def render_json(specs: Iterable[ToolSpec], fmt: str) -> str:
    """``render`` as printable text: indented JSON for the API formats, the manifest otherwise."""
    out = render(specs, fmt)
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, indent=2)


def manifest(specs: Iterable[ToolSpec], fmt: str = "text") -> str:
    """The system-prompt text that describes tools when a model gets no native tools array."""
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"{fmt!r} is not a text tool format; expected one of {', '.join(TEXT_FORMATS)}")
    out = render(specs, fmt)
    return out if isinstance(out, str) else ""  # text formats always render to a string
