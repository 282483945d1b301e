"""JSON Schema regular expressions from MCP servers, matched in linear time or not at all.

A server's ``pattern`` (and ``patternProperties``) is code IRIS runs on the model's
arguments. jsonschema runs it with Python's ``re``, a backtracking engine: measured on
these 2-core machines, ``"^(a+)+$"`` against 24 a's and a ``!`` takes 0.24 s and doubles
per character (28 characters froze the daemon 8 s). A worker thread does not help:
``re`` holds the GIL while it matches, so the event loop stalls just as long. The
``regex`` package's ``timeout=`` stops it, but burns a core until then and still has
exponential cases (``^(a|a)+$``: 1 s at 25 characters). RE2 (``google-re2``) cannot
backtrack: the same pattern against 1,000,000 characters takes 2.3 ms.

So patterns are matched with RE2. One RE2 cannot run (a look-around, a back-reference:
about what ECMA-262 has and RE2 leaves out) is not checked, with one log line, and the
server judges the argument itself; so is every pattern when google-re2 is missing.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError

try:  # pinned in requirements/runtime.txt; without it patterns go unchecked, never unsafe
    import re2
except ImportError:  # pragma: no cover - exercised by monkeypatching ENGINE in the tests
    re2 = None

log = logging.getLogger(__name__)

ENGINE: Any = re2
"""The linear-time regex module (``re2``), or None when it is not installed."""
MAX_PATTERN_CHARS = 1_000
"""Longer patterns are not checked: RE2 compiles them into automata of bounded memory."""
_RE2_MAX_MEM = 8 << 20  # RE2's own default: a pattern that needs more is refused, not run


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any | None:
    """RE2's compiled ``pattern``, or None (logged once per pattern) when it cannot be checked."""
    shown = pattern if len(pattern) <= 80 else pattern[:79] + "…"
    if ENGINE is None:
        log.warning("MCP schema pattern %r not checked: google-re2 is not installed", shown)
        return None
    if len(pattern) > MAX_PATTERN_CHARS:
        log.warning("MCP schema pattern %r not checked: longer than %d characters", shown, MAX_PATTERN_CHARS)
        return None
    options = ENGINE.Options()
    options.log_errors = False  # RE2 would print its own refusal on stderr
    options.max_mem = _RE2_MAX_MEM
    try:
        return ENGINE.compile(pattern, options)
    except Exception as exc:  # re2.error, or a pattern that is not text
        log.warning("MCP schema pattern %r not checked: RE2 cannot run it (%s)", shown, exc)
        return None


def search(pattern: Any, text: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text``; None when it cannot be checked safely."""
    compiled = _compiled(pattern) if isinstance(pattern, str) else None
    return None if compiled is None else compiled.search(text) is not None


def clear_cache() -> None:
    """Forget compiled patterns (and which were logged), e.g. after switching ``ENGINE``."""
    _compiled.cache_clear()


# -- jsonschema keywords: the library's own, with every regex matched through ``search`` ----


def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``pattern``: a string must match; an unchecked pattern passes (the server judges)."""
    if validator.is_type(instance, "string") and search(patrn, instance) is False:
        # The value is named by its path; echoing a long one would only crowd the message.
        yield ValidationError(f"does not match the pattern {patrn!r}")


def pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``patternProperties``: a key's value must fit each schema whose pattern matches the key."""
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            if search(patrn, key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def _extras(instance: dict[str, Any], schema: Any) -> list[str]:
    """Keys neither in ``properties`` nor (possibly) matched by ``patternProperties``."""
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [
        key
        for key in instance
        if key not in properties and not any(search(p, key) is not False for p in patterns)
    ]


def additional_properties(
    validator: Any, extra: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``additionalProperties``, where a key an unchecked pattern might match counts as known."""
    if not validator.is_type(instance, "object"):
        return
    extras = _extras(instance, schema)
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        listed = ", ".join(repr(k) for k in sorted(extras))
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def not_checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """A keyword left to the server."""
    return iter(())


def keywords(known: dict[str, Any], uses_pattern_properties: bool) -> dict[str, Any]:
    """Replacements for a jsonschema class's keywords (``known``) that would run a regex with ``re``.

    jsonschema finds the keys ``unevaluatedProperties`` applies to with ``re.search``
    over ``patternProperties``: in a schema that has both, it is left to the server.
    """
    safe = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
    }
    if uses_pattern_properties:
        safe["unevaluatedProperties"] = not_checked
    return {name: check for name, check in safe.items() if name in known}
