"""The real model under a constrained choice (the test server compiles ``format`` to a
llama.cpp grammar, as Ollama does): whatever it is asked, it names a shown tool with
arguments that tool takes, or none."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from iris_voice.config import LlmConfig
from iris_voice.tools.choice import NONE, choice_schema, read_choice
from tests.support.fakes import builtin_registry

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]

SHOWN = ("get_current_time", "set_timer", "calculator")


@pytest.mark.parametrize(
    "question",
    ["What time is it in Tokyo?", "Set a tea timer for three minutes.", "Open the garage door.", "Hello!"],
)
def test_a_constrained_reply_is_a_choice_among_the_shown_tools(ollama_server, question):
    registry = builtin_registry()
    specs = [registry.get(n).spec for n in SHOWN]
    schema = choice_schema(specs)
    body = {
        "model": "qwen2.5-coder:1.5b",
        "messages": [
            {"role": "system", "content": LlmConfig().system_prompt},
            {"role": "user", "content": question},
        ],
        "format": schema,
        "stream": False,
        "options": {"temperature": 0.0, "num_predict": 200},
    }
    reply = httpx.post(f"{ollama_server.url}/api/chat", json=body, timeout=300).json()["message"]["content"]
    choice = read_choice(reply, SHOWN)  # raises if the reply is no choice
    jsonschema.validate(json.loads(reply), schema)
    print(question, "->", reply)
    assert choice.tool in (*SHOWN, NONE)
