"""Configuration of MCP tool servers: ``[mcp]`` and its ``[[mcp.servers]]`` tables.

Kept apart from the client so that loading and checking a config never imports the
MCP SDK (half a second of imports that ``iris check-config`` does not need).

```toml
[mcp]
enabled = true

[[mcp.servers]]
name = "time"
category = "time"                 # where the model finds its tools: "time", "utilities/math"
command = "python3"
args = ["-m", "mcp_server_time", "--local-timezone", "Europe/Paris"]
mode = "lazy"                     # or "eager": every tool always in the prompt
```
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Lower-case path segments: the model types these back, and case mistakes are common.
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McpServerConfig(_Section):
    """One MCP server: how to start or reach it, where its tools sit, how long to wait."""

    name: str
    """Unique name used in logs and error messages (``time``)."""
    category: str
    """Category path of its tools, segments joined by ``/`` (``time``, ``utilities/math``)."""
    description: str = ""
    """A few words shown to the model when it browses categories (``current time, time zones``)."""
    command: str = ""
    """Executable of a stdio server (``python3``, ``uvx``); exclusive with ``url``."""
    args: list[str] = []
    """Arguments of ``command``."""
    url: str = ""
    """Endpoint of a streamable-HTTP server (``http://127.0.0.1:8000/mcp``); exclusive with ``command``."""
    env: dict[str, str] = {}
    """Extra environment of a stdio server, over a safe default (HOME, PATH, USER…)."""
    cwd: str = ""
    """Working directory of a stdio server; empty keeps IRIS's."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0
    """Longest wait for one tool call before the model gets an ``Error: … timed out``."""
    startup_timeout_s: Annotated[float, Field(gt=0, le=600)] = 20.0
    """Longest wait for the server to start and answer ``initialize`` and ``tools/list``."""
    mode: Literal["lazy", "eager"] = "lazy"
    """``lazy``: the model browses to the tools on demand; ``eager``: they are always listed."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError("must be 1-64 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        path = value.strip().strip("/")
        parts = path.split("/")
        if not path or not all(_SEGMENT.fullmatch(p) for p in parts):
            raise ValueError(
                "must be a path such as 'time' or 'utilities/math' (lower-case a-z, 0-9, '_', '-')"
            )
        return path

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' (stdio server) or 'url' (streamable HTTP)")
        if self.url and not re.match(r"https?://", self.url):
            raise ValueError("url must start with http:// or https://")
        return self


class McpConfig(_Section):
    """MCP tool servers, started in the background when IRIS starts."""

    enabled: bool = True
    """False ignores every server (handy to rule MCP out while debugging)."""
    servers: list[McpServerConfig] = []
    """The servers, each with its own category."""

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
