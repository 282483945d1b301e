"""One example call per retrieved tool, built from its own schema (``retrieval.examples``).

A 1.5B model fills in a call better when it has seen one: which argument takes what, in
which form ("Europe/London", not "London"; "14:30", not "2:30 pm"). The values come from
what the tool's server wrote — a property's ``examples``, its ``default``, its first
``enum`` value, or the first quoted value after "e.g." in its description — so IRIS never
invents one; a required argument the schema gives no value for shows its name in angle
brackets (``"<time>"``). A tool whose schema offers no value at all gets no example: a
call of placeholders only teaches the form, and the definition above already does.
"""

from __future__ import annotations

import re
from typing import Any

from iris_voice.tools.registry import ToolSpec

_EG = re.compile(r"""\be\.?g\.?,?\s*(?:'([^']+)'|"([^"]+)"|`([^`]+)`)""", re.IGNORECASE)
"""The first quoted value after "e.g." in a description: "(e.g., 'America/New_York', …)"."""


def schema_value(schema: Any) -> Any:
    """A value the schema itself gives for a property, or ``None``."""
    if not isinstance(schema, dict):
        return None
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if schema.get("default") not in (None, "", [], {}):
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    description = schema.get("description")
    if isinstance(description, str) and (m := _EG.search(description)):
        return next(g for g in m.groups() if g)
    return None


def example_arguments(spec: ToolSpec) -> dict[str, Any] | None:
    """The arguments of an example call of ``spec``: each required property with the value
    its schema gives, or ``"<name>"`` where it gives none. ``None`` when the schema gives
    no value at all, and for a tool without required parameters: optional values (a
    default ``context_lines``, a ``start_timestamp`` of 2024) would be copied into calls
    that should leave them out."""
    params = spec.parameters if isinstance(spec.parameters, dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = [r for r in params.get("required") or () if r in props]
    values = {name: schema_value(props[name]) for name in required}
    if all(v is None for v in values.values()):
        return None
    return {name: f"<{name}>" if v is None else v for name, v in values.items()}


def with_example(definition: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """A rendered definition (``{"type": "function", "function": {...}}``) with an
    ``example`` call after its parameters, when the schema gives one."""
    args = example_arguments(spec)
    function = definition.get("function")
    if args is None or not isinstance(function, dict):
        return definition
    example = {"name": function.get("name", spec.name), "arguments": args}
    return {**definition, "function": {**function, "example": example}}
