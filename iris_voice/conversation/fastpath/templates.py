"""The sentence templates: Home Assistant's English ones for time, date and timers, plus IRIS's.

Home Assistant's templates come from the ``home-assistant-intents`` package at run time
(never copied into IRIS). Only the parts that fit a desktop assistant are kept: the
sentences about areas ("the kitchen timer") and delayed commands ("turn off the lights
in 5 minutes") need Home Assistant's devices, so they are left out. IRIS's own templates
(``sentences/<language>.yaml``) are merged in: a named place, arithmetic, reminders and
more ways to start a timer. Only the intents some enabled tool answers are compiled.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from importlib import resources
from typing import Any

import home_assistant_intents
import yaml
from hassil import Intents
from hassil.util import merge_dict

HA_LISTS = ("timer_hours", "timer_minutes", "timer_seconds", "timer_half", "timer_name")
"""The slot lists those intents use that make sense without Home Assistant's devices."""

_LIST_REF = re.compile(r"\{(\w+)")


def _usable(data: dict[str, Any]) -> bool:
    """A block of sentences IRIS can answer: no areas, devices or delayed commands."""
    used = {name for s in data["sentences"] for name in _LIST_REF.findall(s)}
    return used <= set(HA_LISTS) and not data.get("requires_context") and not data.get("slots")


def home_assistant_templates(wanted: Collection[str], language: str = "en") -> dict[str, Any]:
    """The usable part of Home Assistant's templates of the ``wanted`` intents for
    ``language``, as a hassil dict."""
    ha = home_assistant_intents.get_intents(language) or {}  # a fresh dict, read from the package
    if not ha:
        raise ValueError(f"home-assistant-intents has no sentences for language {language!r}")
    intents = {}
    for name in sorted(wanted):
        usable = [d for d in ha["intents"].get(name, {}).get("data", []) if _usable(d)]
        if usable:  # an intent about devices or areas has nothing IRIS can answer
            intents[name] = {"data": usable}
    return {
        "language": language,
        "intents": intents,
        "lists": {name: ha["lists"][name] for name in HA_LISTS if name in ha["lists"]},
        "expansion_rules": ha.get("expansion_rules", {}),
        "skip_words": ha.get("skip_words", []),
    }


def iris_templates(language: str = "en") -> dict[str, Any]:
    """IRIS's own templates, shipped in the package."""
    path = resources.files("iris_voice.conversation.fastpath") / "sentences" / f"{language}.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_intents(wanted: Collection[str], language: str = "en") -> Intents:
    """Both sets merged (IRIS's sentences extend Home Assistant's intents), only the
    ``wanted`` intents, compiled."""
    merged = home_assistant_templates(wanted, language)
    own = iris_templates(language)
    own["intents"] = {name: data for name, data in own["intents"].items() if name in wanted}
    merge_dict(merged, own)
    return Intents.from_dict(merged)
