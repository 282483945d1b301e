"""The real model (Qwen2.5-Coder-1.5B via the test server) answering through a lazy MCP server."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from iris_voice.app.assembly import open_app
from iris_voice.config import Config, LlmConfig, McpConfig, RetrievalConfig, ToolsConfig
from iris_voice.conversation.responder import ask
from iris_voice.tools.mcp.manager import BROWSE_TOOL, EXECUTE_TOOL, LAZY_HINT
from tests.support.mcp_servers import calculator, time_server

pytestmark = [pytest.mark.model, pytest.mark.timeout(600)]


def paris_hours() -> set[int]:
    """The hour in Paris now (and a couple of minutes either side), in 24h and 12h forms."""
    now = datetime.now(UTC)
    hours = set()
    for delta in (-3, 0, 3):  # the hour may turn over during the turn
        h = (now + timedelta(minutes=delta)).astimezone(ZoneInfo("Europe/Paris")).hour
        hours |= {h, h % 12 or 12}
    return hours


async def test_time_in_paris_through_a_lazy_mcp_server(ollama_server, tmp_path):
    llm = LlmConfig(host=ollama_server.url, model="qwen2.5-coder:1.5b", temperature=0.0)
    # The native clock is left out: the MCP time server is the only way to the time.
    tools = ToolsConfig(timezone="UTC", disabled=["get_current_time"], timers_db=str(tmp_path / "t.db"))
    servers = [
        time_server(description="get the current time in any time zone"),
        calculator(description="evaluate math expressions"),
    ]
    # Retrieval off: this is the meta-tools' path (browse, then execute).
    cfg = Config(
        llm=llm, tools=tools, mcp=McpConfig(servers=servers), retrieval=RetrievalConfig(enabled=False)
    )
    devnull = open(os.devnull, "w")  # noqa: SIM115
    async with open_app(cfg, errlog=devnull) as app:  # the assembly every entry point uses
        assert app.mcp is not None and await app.mcp.wait_ready(60)
        assert "time/get_current_time" not in app.registry  # lazy: not in the prompt
        assert app.cfg.llm.system_prompt.endswith(LAZY_HINT)
        trace = await ask(app.responder, "What time is it in Paris?")
    devnull.close()
    calls = [(c["name"], c["arguments"], c["ok"]) for c in trace.tool_calls]
    names = [c[0] for c in calls]
    assert BROWSE_TOOL in names and EXECUTE_TOOL in names, trace.to_dict()
    assert names.index(BROWSE_TOOL) < names.index(EXECUTE_TOOL), calls  # browse, then execute
    executed = [c for c in trace.tool_calls if c["name"] == EXECUTE_TOOL and c["ok"]]
    assert executed, calls
    assert executed[-1]["arguments"]["tool_path"] == "time/get_current_time"
    assert "Europe/Paris" in executed[-1]["result"]
    # "15:42", "3 PM", "3 o'clock", or ISO "2026-11-22T15:42:52+01:00" read out as is.
    found = re.findall(r"(?:\b|T)(\d{1,2})(?::\d{2}|\s*[ap]\.?m\.?|\s*o'clock)", trace.reply, re.I)
    spoken = {int(h) for h in found}
    assert spoken & paris_hours(), (trace.reply, paris_hours())
