"""JSON Schemas from typed Python functions, kept small for a small model.

A tool's parameters come from its type hints (``Annotated[int, "description"]`` or a
pydantic ``Field``); ``compact_schema`` drops what costs tokens and says nothing
(titles, ``anyOf [X, null]``); a validation error becomes one line per argument, for the
model to fix.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model


def _with_description(annotation: Any) -> Any:
    """Turn ``Annotated[T, "text"]`` into ``Annotated[T, Field(description="text")]``."""
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        extras = [Field(description=e) if isinstance(e, str) else e for e in extras]
        return Annotated[(base, *extras)]
    return annotation


def model_from_function(func: Callable[..., Any], name: str) -> type[BaseModel]:
    """Build a pydantic model whose fields are ``func``'s parameters."""
    hints = get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs cannot be described to a model")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (_with_description(hints.get(pname, str)), default)
    config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
    return create_model(f"{name}_args", __config__=config, **fields)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Shrink a pydantic JSON Schema: drop titles, inline optionals, keep meaning.

    Every token of tool definitions is paid on each turn of a voice assistant, so
    ``anyOf: [X, null]`` becomes ``X`` (optional is already said by ``required``) and
    ``title``/``additionalProperties`` noise goes.
    """

    def walk(node: Any, names: bool = False) -> Any:
        if isinstance(node, dict) and names:  # keys of "properties" are argument names, kept as is
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, dict):
            node = {
                k: walk(v, k in ("properties", "$defs"))
                for k, v in node.items()
                if k not in ("title", "additionalProperties")
            }
            any_of = node.get("anyOf")
            if isinstance(any_of, list):
                non_null = [s for s in any_of if s != {"type": "null"}]
                if len(non_null) == 1 and len(non_null) < len(any_of):
                    rest = {k: v for k, v in node.items() if k != "anyOf"}
                    node = {**non_null[0], **rest}
            if node.get("default", "x") is None:
                node.pop("default")
            return node
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    if not out.get("required"):
        out.pop("required", None)
    return out


def describe(func: Callable[..., Any]) -> str:
    """The first paragraph of a docstring, joined into one line."""
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.split("\n\n")[0].split())


def format_validation_error(name: str, exc: ValidationError) -> str:
    """One readable line per problem, naming the argument, for the model to fix."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown argument"
        parts.append(f"{loc}: {msg}")
    return f"Error: invalid arguments for {name}: " + "; ".join(parts)
