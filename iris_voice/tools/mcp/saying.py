"""A short MCP result said as it is, instead of a second model round to phrase it.

Phrasing a tool's answer costs a model round that reads the call and the result again
(seconds on two cores). A result a listener understands when read out — a row or two of a
query, a short list of names, a few lines of a note, a time in a zone or one converted to
another ("5:00 PM in Tokyo is 8:00 AM in London."), what a memory holds of the names
asked for ("Anna: birthday May 3rd.") — is said from its own words here;
anything else (JSON objects, commit hashes, long text, nothing at all) is left to the
model, which can explain it.

A tool that changes something is said by ``say_done``, and only where its result shows
what was done: the records it stored ("Saved: Bob, likes chess."), the rows it changed, or
a short line of success ("Files staged successfully."). "Successfully wrote /tmp/…", an
empty list (nothing new stored) or JSON of another shape go to the model.
"""

from __future__ import annotations

import ast
import json
import re
from datetime import datetime
from typing import Any

from iris_voice.tools.builtin.clock import clock_words, day_words, zone_city

MAX_CHARS = 300
"""Longest result said without the model: beyond it a listener needs a summary."""
MAX_GRAPH_CHARS = 20_000
"""Longest whole memory searched for the names a request asks about (``say_known_about``)."""
MAX_MOMENTS_CHARS = 1000
"""Longest JSON read for a time in a zone (a conversion is ~400 characters indented)."""
MAX_LINES = 8
MAX_ROWS = 5
MAX_COLUMNS = 3

# What a listener cannot take in by ear: hashes, timestamps, paths, markup, code.
_UNSAYABLE = re.compile(
    r"\b[0-9a-f]{12,}\b|\d{4}-\d\d-\d\dT\d|\d\d:\d\d:\d\d|[{}<>`|\\]|\w/\w|https?:|\bnull\b",
    re.IGNORECASE,
)
# A server that reports a failure as ordinary text ("Database error: no such table: …",
# "Access denied - path outside allowed directories"): the model reads it and can mend its
# call; said as it is, it would be the answer.
_FAILED = re.compile(
    r"^\W*(?:[\w ]{0,30}\b(?:error|exception|traceback|fatal)\b|access denied|permission denied|failed\b"
    r"|invalid\b|unknown (?:table|column|file|tool))|\bno such (?:table|column|file|directory)\b"
    r"|\b(?:does not|doesn't) exist\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d+[.)]\s+|\[(?:FILE|DIR)\]\s+|\*\s*)")
_NOTE = re.compile(r"\s*\([^()]*\)")
_WORDY_KEY = re.compile(r"[A-Za-z][A-Za-z _]*")
_DONE_WORDS = re.compile(
    r"\b(?:success\w*|created|added|saved|stored|updated|deleted|removed|staged|committed"
    r"|switched|moved|renamed|inserted)\b",
    re.IGNORECASE,
)
_NAME_KEYS = ("name", "entityName", "title")
_NAME_WORD = re.compile(r"\b[A-Z][a-z]+\b")
_NOT_NAMES = frozenset({"i", "iris", "jarvis", "hey", "please"})
MAX_DONE_CHARS = 120
"""Longest line of success said as it is."""


# Verbs in tool names that say how, not what: "list_tables" lists tables.
_HOW = frozenset("list get read show search find open fetch describe query all".split())


def reports_failure(text: str) -> bool:
    """Whether a tool's ``text`` is a failure the server reported as an ordinary result
    ("Database error: no such table: coffee_prices")."""
    return bool(_FAILED.search(text.strip()))


def found_nothing(text: str) -> bool:
    """Whether ``text`` is a lookup's answer that found nothing: an object whose every
    value is an empty list (MCP's memory server: ``{"entities": [], "relations": []}``).
    A query's ``[]`` is not: a row filter may have been written wrong, and the model can
    mend its query."""
    text = text.strip()
    # short first: a file or a page that was read is never parsed on the event loop
    data = _literal(text) if text and len(text) <= MAX_CHARS else None
    return isinstance(data, dict) and bool(data) and all(v == [] for v in data.values())


def listing_label(tool_name: str) -> str:
    """What a tool without parameters lists, from its name ("list_tables" → "tables");
    "" when its name says only how."""
    parts = re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool_name.rpartition("/")[2])
    return " ".join(p.lower() for p in parts if p and p.lower() not in _HOW)


def say_result(text: str, label: str = "") -> str | None:
    """What to say for a read-only tool's ``text``, or None when the model should phrase it.

    ``label``: what the tool lists (``listing_label``), said before a list of several
    names: "Tables: products and customers." — said bare, the names would sound like the
    answer to "what products are in the shop?"."""
    text = text.strip()
    if not text or not text.replace("\n", "").replace("\t", "").isprintable():
        return None  # empty, or control characters (a terminal's colours) no voice should read
    if reports_failure(text):
        return None
    data = _literal(text) if len(text) <= MAX_MOMENTS_CHARS else None
    if (moments := _say_moments(data)) is not None:
        return moments  # a time, however long its JSON: one short sentence
    if not label and (known := _say_known(data)) is not None:
        return known  # what a memory holds of the names asked for, however long its JSON
    if len(text) > MAX_CHARS:
        return None
    if data is None:
        said = _say_lines(text)
    elif _flat_rows(data):
        said = _say_rows(data, label)
    else:
        return None  # JSON of another shape: the model reads it better than a listener would
    if not said or _UNSAYABLE.search(said) or not any(c.isalnum() for c in said):
        return None
    return said[:1].upper() + said[1:]


def say_done(*texts: str) -> str | None:
    """What to say for the ``texts`` a tool that changes something answered (one call's,
    or each of a round's calls'), or None when one does not show what was done (the
    model explains it).

    Records stored under a name ("Bob" with the observation "likes chess", as MCP's memory
    server echoes what it created) → "Saved: Bob, likes chess." (two calls storing under
    one name, said as one: "Saved: Bob, likes chess and plays chess."); rows a query changed
    → "Done: 1 row changed."; a short line that says it succeeded, as it is."""
    said: list[str] = []
    stored: dict[str, list[str]] = {}
    for text in texts:
        one = _done(text.strip())
        if one is None:
            return None
        if isinstance(one, str):
            said.append(one)
            continue
        for name, items in one:
            known = stored.setdefault(name, [])
            known.extend(i for i in items if i not in known)
    if stored:
        said.append(f"Saved: {'; '.join(f'{name}, {_and(items)}' for name, items in stored.items())}.")
    text = " ".join(said)
    return text if text and not _UNSAYABLE.search(text) else None


def _done(text: str) -> str | list[tuple[str, list[str]]] | None:
    """One result of a change: a sentence to say, the records it stored (name, items), or
    None when it does not show what was done."""
    if not text or reports_failure(text) or len(text) > MAX_MOMENTS_CHARS:
        return None
    data = _literal(text)
    if data is None:
        line = text.rstrip(".")
        if (
            "\n" in line
            or len(line) > MAX_DONE_CHARS
            or _UNSAYABLE.search(line)
            or not _DONE_WORDS.search(line)
        ):
            return None
        return line[:1].upper() + line[1:] + "."
    if isinstance(data, dict) and len(data) == 1:  # {"entities": [...]}: the records themselves
        data = next(iter(data.values()))
    if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
        return None  # nothing new stored, or another shape
    if all(set(r) == {"affected_rows"} for r in data):
        changed = sum(r["affected_rows"] for r in data if isinstance(r["affected_rows"], int))
        return f"Done: {changed} {'row' if changed == 1 else 'rows'} changed." if changed > 0 else None
    facts = [_stored(r) for r in data]
    if len(data) > MAX_ROWS or not all(facts):
        return None
    return [f for f in facts if f is not None]


def _stored(record: dict[str, Any]) -> tuple[str, list[str]] | None:
    """One stored record as its name and what was stored under it (("Bob", ["likes
    chess"])); None when it has no name or stored nothing new."""
    name = next((record[k].strip() for k in _NAME_KEYS if isinstance(record.get(k), str)), "")
    # an item's own full stop would end the sentence it is said in twice ("…Anna..")
    items = [
        s.strip().rstrip(".") for v in record.values() if isinstance(v, list) for s in v if isinstance(s, str)
    ]
    items = [s for s in items if s]
    return (name, items) if name and items else None


def _literal(text: str) -> Any:
    """``text`` as JSON or a Python literal (servers written in Python print ``repr()`` of
    their rows), when it is one: None for text ("[FILE] a.md" is a listing, not a list)."""
    if text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _moment(value: Any) -> tuple[datetime, str] | None:
    """A time in a zone (``{"timezone": "Asia/Tokyo", "datetime": "2026-…T17:00:00+09:00"}``,
    as MCP's time server answers): its wall time and the zone's place."""
    if not isinstance(value, dict):
        return None
    zone, stamp = value.get("timezone"), value.get("datetime")
    if not isinstance(zone, str) or not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp), zone_city(zone)
    except ValueError:
        return None


def _say_moments(data: Any) -> str | None:
    """One time in a zone ("It is 6:17 AM on Sunday, November 29, 2026 in Paris."), or a
    conversion: two of them in one object, the source first ("5:00 PM in Tokyo is 8:00 AM in
    London."; each with its weekday when the dates differ)."""
    if one := _moment(data):
        moment, place = one
        return f"It is {clock_words(moment)} on {day_words(moment)} in {place}."
    if not isinstance(data, dict):
        return None
    keys = sorted(data, key=lambda k: (k != "source", k != "target"))
    pair = [m for k in keys if (m := _moment(data[k]))]
    if len(pair) != 2:
        return None
    (a, at), (b, bt) = pair
    day = (lambda m: f" on {m.strftime('%A')}") if a.date() != b.date() else (lambda m: "")
    return f"{clock_words(a)}{day(a)} in {at} is {clock_words(b)}{day(b)} in {bt}."


def _say_known(data: Any) -> str | None:
    """Records found under names, with what is stored under each, and the relations
    between them (MCP's memory server: ``{"entities": [{"name": "Anna", "observations":
    ["birthday May 3rd"]}], "relations": [{"from": "Anna", "to": "Tom", "relationType":
    "sister_of"}]}``) → "Anna: birthday May 3rd. Anna sister of Tom."; None for any other
    shape, and for nothing found (the model explains it). Not for a tool without
    parameters (``read_graph``): it answers everything, not what was asked."""
    if not isinstance(data, dict) or not data or not all(isinstance(v, list) for v in data.values()):
        return None
    facts = []
    for record in (r for v in data.values() for r in v):
        if not isinstance(record, dict):
            return None
        if stored := _stored(record):
            facts.append(f"{stored[0]}: {_and(stored[1])}")
        elif all(isinstance(record.get(k), str) for k in ("from", "relationType", "to")):
            facts.append(f"{record['from']} {record['relationType'].replace('_', ' ')} {record['to']}")
        else:
            return None
    said = ". ".join(facts) + "."
    if not facts or len(facts) > MAX_ROWS or len(said) > MAX_CHARS or _UNSAYABLE.search(said):
        return None
    return said


def say_known_about(text: str, request: str) -> str | None:
    """What a whole memory (``read_graph``, answered with everything) holds of the names
    ``request`` asks about: "Recall what you know about my sister Anna." → "Anna's
    birthday: May 3rd." — the records whose name holds a capitalised word of the request
    (not its first), and the relations of those names; None when the request names no one,
    nothing matches or the result is not a memory's (the model reads it)."""
    text = text.strip()
    names = {w.lower() for w in _NAME_WORD.findall(request.split(maxsplit=1)[-1])} - _NOT_NAMES
    if not names or not text or len(text) > MAX_GRAPH_CHARS:
        return None
    data = _literal(text)
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        return None

    def named(name: object) -> bool:
        words = re.findall(r"[a-z]+", str(name).lower().replace("'s", ""))
        return isinstance(name, str) and bool(names & set(words))

    records = [r for v in data.values() for r in v if isinstance(r, dict)]
    # a record under the name with nothing stored in it ("Anna", a person) says nothing
    found = [r for r in records if any(named(r.get(k)) for k in _NAME_KEYS) and _stored(r)]
    found += [r for r in records if named(r.get("from")) or named(r.get("to"))]
    return _say_known({"found": found}) if found else None


def _flat_rows(value: Any) -> bool:
    """Whether ``value`` is a list of flat records (a query's rows)."""
    return (
        isinstance(value, list)
        and all(isinstance(r, dict) for r in value)
        and all(isinstance(v, str | int | float | bool) for r in value for v in r.values())
    )


def _say_rows(rows: list[dict[str, Any]], label: str = "") -> str | None:
    if not rows or len(rows) > MAX_ROWS or any(len(r) > MAX_COLUMNS or not r for r in rows):
        return None  # no rows is the model's to explain ("no customer lives there")
    if all(len(r) == 1 for r in rows) and len({next(iter(r)) for r in rows}) == 1:
        key = next(iter(rows[0]))
        values = [_value(next(iter(r.values()))) for r in rows]
        # One column: its name once ("price: 4.5"), or just the values ("products and customers").
        listed = _and(values)
        if label or (len(rows) == 1 and _key(key)):
            return f"{label or _key(key)}: {listed}."
        return f"{listed}."
    return "; ".join(", ".join(_field(k, v) for k, v in r.items()) for r in rows) + "."


def _field(key: str, value: Any) -> str:
    name = _key(key)
    return f"{name} {_value(value)}" if name else _value(value)


def _key(key: str) -> str:
    """A column name a listener can hear ("unit_price" → "unit price"); "" for "COUNT(*)"."""
    return key.replace("_", " ").strip() if _WORDY_KEY.fullmatch(key) else ""


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _say_lines(text: str) -> str | None:
    """A few lines as sentences: bullets and heading marks dropped, notes in parentheses
    dropped, a line ending in ":" kept with the items under it ("Untracked files: a.txt").
    A label with nothing under it ("Unstaged changes:") is left to the model: said alone it
    would claim what is not there."""
    raw = [line for line in text.splitlines() if _BULLET.sub("", _NOTE.sub("", line)).strip()]
    if not raw or len(raw) > MAX_LINES:
        return None
    heading = text.lstrip().startswith("#")
    groups: list[tuple[str, list[str]]] = []
    nested = False  # the open group's items were indented: an unindented line ends it
    for i, line in enumerate(raw):
        words = _BULLET.sub("", _NOTE.sub("", line)).strip()
        indented = line[:1].isspace()
        if words.endswith(":") or (heading and i == 0) or (nested and not indented):
            label = words.rstrip(":") if words.endswith(":") or (heading and i == 0) else ""
            groups.append((label, [] if label else [words.rstrip(".")]))
            nested = False
        elif groups:
            groups[-1][1].append(words.rstrip("."))
            nested = nested or indented
        else:
            groups.append(("", [words.rstrip(".")]))
    if any(label and not items for label, items in groups):
        return None
    sentences = []
    for label, items in groups:
        body = ", ".join(items)
        sentence = f"{label}: {body}" if label else body
        sentences.append(sentence[:1].upper() + sentence[1:] + ".")
    return " ".join(sentences)
