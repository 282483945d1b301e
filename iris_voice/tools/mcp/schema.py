"""MCP input schemas: shrink them for the model, coerce and validate arguments against them.

IRIS's own tools validate with pydantic; an MCP tool brings a raw JSON Schema, so its
arguments are checked with ``jsonschema`` before anything is sent to the server. A
small model writes numbers as strings, so ``"12"`` becomes ``12`` where the schema asks
for a number, as it does for native tools. Servers write odd schemas: one that is not
valid JSON Schema (``schema_problem``) keeps its tool away from the model, and nothing
here raises on garbage.

A schema's regular expressions are matched with RE2, in linear time (``patterns``), and
the arguments checked are bounded (``MAX_ARGUMENT_CHARS``): validation cannot run away,
and callers run it in a worker thread (``check_arguments_async``) so that even a big
schema never holds up the event loop.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
import math
import re
from typing import Any

from jsonschema import Draft202012Validator, SchemaError, validators
from jsonschema.exceptions import ValidationError, relevance
from referencing import Registry

from iris_voice.errors import ToolError
from iris_voice.tools.mcp import patterns
from iris_voice.tools.render import schema_type_label
from iris_voice.tools.schemas import compact_schema

log = logging.getLogger(__name__)

_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
_INT = re.compile(r"[+-]?\d+")
_MAX_ERRORS = 3
MAX_ARGUMENT_CHARS = 32_768
"""Longest arguments (as JSON) IRIS checks and sends: the model's whole context is ~16,000
characters, so anything longer did not come from a sensible call."""


def schema_problem(schema: Any) -> str | None:
    """Why an input schema cannot describe a tool's arguments, or None when it can.

    MCP requires an object schema. One that is not valid JSON Schema (``"properties":
    {"x": 42}``, ``"required": "x"``) would make IRIS refuse or misjudge every call, and
    the model could not learn the arguments from it: such a tool is left out.
    """
    if not isinstance(schema, dict):
        return "the input schema is not an object"
    kind = schema.get("type", "object")
    if kind != "object":
        return f"the input schema has type {kind!r}, not 'object'"
    if not isinstance(schema.get("properties", {}), dict):
        return "'properties' is not a mapping"
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "schema"
        return f"invalid JSON Schema at {where}: {exc.message}"
    except Exception as exc:  # e.g. an unknown $schema dialect the library trips on
        return f"unreadable schema: {exc}"
    return None


def compact_input_schema(schema: Any) -> dict[str, Any]:
    """``compact_schema`` for a server's input schema: no titles or ``anyOf [X, null]`` noise."""
    if not isinstance(schema, dict):
        return dict(_EMPTY_OBJECT, properties={})
    try:
        return compact_schema(copy.deepcopy(schema))
    except Exception:  # a shape compact_schema did not expect: show it unshrunk
        log.debug("compact_schema failed; keeping the raw schema", exc_info=True)
        return schema


def _types(schema: Any) -> set[str]:
    """The JSON types a (sub)schema names, looking through ``anyOf``/``oneOf``."""
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found = {kind}
    else:
        found = {t for t in kind if isinstance(t, str)} if isinstance(kind, list) else set()
    for key in ("anyOf", "oneOf"):
        alternatives = schema.get(key)
        for alt in alternatives if isinstance(alternatives, list) else ():
            found |= _types(alt)
    return found


def _coerce_value(value: Any, schema: Any) -> Any:
    """One value made to fit its schema the way pydantic's lax mode would, else unchanged."""
    kinds = _types(schema)
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number and kinds == {"string"}:
        return str(value)  # as pydantic's coerce_numbers_to_str does for native tools
    if isinstance(value, str) and "string" not in kinds:
        text = value.strip()
        if "integer" in kinds and _INT.fullmatch(text):
            return int(text)
        if "number" in kinds:
            try:
                number = float(text)
            except ValueError:
                return value
            if math.isfinite(number):
                return int(number) if _INT.fullmatch(text) else number
        if "boolean" in kinds and text.lower() in ("true", "false"):
            return text.lower() == "true"
    if isinstance(value, dict) and isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return coerce_arguments(value, schema)
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [_coerce_value(v, schema["items"]) for v in value]
    return value


def coerce_arguments(arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """A copy of ``arguments`` with strings turned into numbers/booleans where the schema says so."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return dict(arguments)
    return {k: _coerce_value(v, props[k]) if k in props else v for k, v in arguments.items()}


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator | None:
    """A compiled validator for a schema (as canonical JSON), or None if the schema is unusable."""
    schema = json.loads(schema_json)
    if schema_problem(schema) is not None:
        return None  # such tools are not offered; should one slip through, the server judges
    cls = validators.validator_for(schema, default=Draft202012Validator)
    # jsonschema matches patterns with Python's re, which can backtrack for seconds: RE2 instead.
    safe = patterns.keywords(cls.VALIDATORS, "patternProperties" in schema_json)
    cls = validators.extend(cls, safe)
    # An empty registry: a remote $ref must never be fetched (IRIS is offline and private).
    return cls(schema, registry=Registry())


def _describe(error: ValidationError) -> list[str]:
    """``name: problem`` lines for one jsonschema error, naming the argument."""
    path = ".".join(str(p) for p in error.absolute_path)
    prefix = f"{path}." if path else ""
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [r for r in error.validator_value if r not in error.instance]
        return [f"{prefix}{m}: is required" for m in missing] or [error.message]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties") if isinstance(error.schema, dict) else None
        known = known if isinstance(known, dict) else {}
        extra = [k for k in error.instance if k not in known]
        return [f"{prefix}{k}: unknown argument" for k in extra] or [error.message]
    message = error.message if len(error.message) <= 160 else error.message[:159] + "…"
    return [f"{path or 'arguments'}: {message}"]


def usage_line(schema: Any) -> str:
    """``Arguments: timezone (string, required), format (string)`` — what a call should hold."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return "This tool takes no arguments: send {}"
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    parts = [
        f"{name} ({schema_type_label(sub, schema)}{', required' if name in required else ''})"
        for name, sub in list(props.items())[:12]
    ]
    return "Arguments: " + ", ".join(parts)


def check_arguments(tool_path: str, arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """Coerce and validate ``arguments``; raise ``ToolError`` naming each bad argument."""
    if not isinstance(arguments, dict):
        raise ToolError(f"arguments for {tool_path} must be a JSON object")
    try:
        size = len(json.dumps(arguments, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):  # a cycle, or nesting deeper than any call needs
        raise ToolError(f"arguments for {tool_path} cannot be read as JSON") from None
    if size > MAX_ARGUMENT_CHARS:
        raise ToolError(
            f"arguments for {tool_path} are too long ({size} characters; at most {MAX_ARGUMENT_CHARS})"
        )
    args = coerce_arguments(arguments, schema)
    try:
        validator = _validator(json.dumps(schema, sort_keys=True, default=str))
        errors = sorted(validator.iter_errors(args), key=relevance) if validator else []
    except Exception as exc:  # an unresolvable $ref or a regex Python rejects: let the server judge
        log.warning("cannot validate arguments of %s: %s", tool_path, exc)
        return args
    if errors:
        lines = list(dict.fromkeys(line for e in errors for line in _describe(e)))[:_MAX_ERRORS]
        usage = usage_line(schema)
        raise ToolError(
            f"invalid arguments for {tool_path}: " + "; ".join(lines) + (f". {usage}" if usage else "")
        )
    return args


async def check_arguments_async(tool_path: str, arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """``check_arguments`` in a worker thread: a large schema or argument never blocks the loop."""
    return await asyncio.to_thread(check_arguments, tool_path, arguments, schema)
