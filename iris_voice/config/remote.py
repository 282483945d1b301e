"""The sections that reach beyond IRIS's process: boost's planner model and MCP tool servers."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from iris_voice.config.sections import _Section

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class BoostConfig(_Section):
    """Boost mode: a planner model directs the local model's tool calls (llm/boost.py)."""

    enabled: bool = False
    backend: Literal["ollama", "openai"] = "ollama"
    """Where the planner runs: an Ollama model, or an OpenAI-compatible ``/v1/chat/completions``."""
    model: str = ""
    """Planner model; "" = ``llm.model`` for the ollama backend (required for openai)."""
    base_url: str = ""
    """Ollama: "" = ``llm.host``. OpenAI: the API root that ends in ``/v1`` (required)."""
    api_key_env: str = ""
    """NAME of the environment variable holding the API key (never the key); "" = no key."""
    max_loops: Annotated[int, Field(ge=1, le=10)] = 3
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    """Longest wait for one whole planner reply."""
    when: Literal["always", "tools"] = "always"
    """``tools``: only requests with tool words (numbers, time, timers…) go to the planner."""
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.2
    tool_format: Literal["concise", "text"] = "concise"
    """How the tools are written into the planner's prompt."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not re.match(r"https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, not {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str) -> str:
        if value and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the NAME of an environment variable that holds the key "
                "(e.g. OPENAI_API_KEY), not the key itself"
            )
        return value

    def problems(self) -> list[str]:
        """Errors that involve two keys, as ``boost.key: reason`` lines (checked only when enabled)."""
        if not self.enabled or self.backend != "openai":
            return []
        out = []
        if not self.base_url:
            out.append(
                'boost.base_url: is required when boost.backend is "openai" (e.g. http://host:8000/v1)'
            )
        if not self.model:
            out.append('boost.model: is required when boost.backend is "openai"')
        return out


_MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Lower-case path segments: the model types categories back, and case mistakes are common.
_MCP_SEGMENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


class McpServerConfig(_Section):
    """One MCP tool server: how to start or reach it, where its tools sit, how long to wait."""

    name: str
    """Unique name for logs and error messages (``time``)."""
    category: str
    """Category path of its tools, segments joined by ``/`` (``time``, ``utilities/math``)."""
    description: str = ""
    """What its tools do, a short verb phrase ("get the current time in any time zone"): the
    model reads it in get_tools_in_category's description to decide when to browse there."""
    command: str = ""
    """Executable of a stdio server (``python3``, ``uvx``, ``mcp-server-time``); exclusive with ``url``."""
    args: list[str] = []
    """Arguments of ``command``."""
    url: str = ""
    """Endpoint of a streamable-HTTP server (``http://127.0.0.1:8000/mcp``); exclusive with ``command``."""
    env: dict[str, str] = {}
    """Extra environment of a stdio server, on top of a safe default (HOME, PATH, USER…)."""
    cwd: str = ""
    """Working directory of a stdio server; empty keeps IRIS's."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    """Longest wait for one tool call before the model gets ``Error: … timed out``."""
    startup_timeout_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    """Longest wait for the server to start and answer ``initialize`` and ``tools/list``."""
    mode: Literal["lazy", "eager"] = "lazy"
    """``lazy``: the model browses to the tools when it needs them; ``eager``: always listed."""
    enabled: bool = True
    """False keeps the entry but neither starts the server nor shows its tools."""
    arguments: dict[str, str | int | float | bool] = {}
    """Arguments IRIS fills in for every tool of this server that takes them, hidden from
    the model (``repo_path`` of a git server started on one repository): a small model
    cannot know the path and guesses one the server refuses."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _MCP_NAME.fullmatch(value):
            raise ValueError("must be 1-64 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        path = value.strip().strip("/")
        if not path or not all(_MCP_SEGMENT.fullmatch(p) for p in path.split("/")):
            raise ValueError("must be a path such as 'time' or 'utilities/math' (a-z, 0-9, '_', '-')")
        return path

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if value and not re.match(r"https?://[^/\s]+", value):
            raise ValueError("must start with http:// or https:// and name a host")
        return value

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' (a stdio server) or 'url' (streamable HTTP)")
        return self


class McpConfig(_Section):
    """MCP tool servers, started in the background when IRIS starts."""

    start_wait_s: Annotated[float, Field(ge=0, le=60)] = 2.0
    """Longest a turn waits for a server that is still starting before the model gets an error."""
    servers: list[McpServerConfig] = []
    """The servers, each under its own category."""
    say_results: bool = True
    """Say a short result of a tool that changes nothing as it is ("price: 4.5", a note's
    few lines, a time converted between zones) instead of asking the model to phrase it:
    one model round instead of two."""

    @model_validator(mode="after")
    def _unique(self) -> McpConfig:
        for attr in ("name", "category"):
            seen: set[str] = set()
            for server in self.servers:
                value = getattr(server, attr)
                if value in seen:
                    raise ValueError(f"two servers have the {attr} {value!r}; each needs its own")
                seen.add(value)
        return self

    def active(self) -> list[McpServerConfig]:
        """The enabled servers."""
        return [s for s in self.servers if s.enabled]
