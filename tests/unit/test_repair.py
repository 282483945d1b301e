"""Time-zone arguments of MCP tools repaired from the places the user named."""

from __future__ import annotations

from iris_voice.tools.registry import Tool, ToolSpec
from iris_voice.tools.repair import named_zones, repair_zones, stated_source, zone_parameters

IANA = "IANA timezone name (e.g., 'America/New_York'). Use 'UTC' if no timezone provided by the user."
CONVERT = {
    "type": "object",
    "properties": {
        "source_timezone": {"type": "string", "description": f"Source {IANA}"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "target_timezone": {"type": "string", "description": f"Target {IANA}"},
    },
}


async def _handler(**arguments: object) -> str:
    return "ran"


def tool(meta: dict) -> Tool:
    return Tool(ToolSpec("time/convert_time", "Convert time between timezones", CONVERT), _handler, meta=meta)


MCP = tool({"server": "time", "mode": "lazy"})


def test_the_zone_parameters_and_the_places_a_request_names():
    assert zone_parameters(CONVERT) == ["source_timezone", "target_timezone"]
    assert named_zones("If it's 8 am in New York, what time is it in Paris?") == [
        "America/New_York",
        "Europe/Paris",
    ]
    assert named_zones("Convert 17:00 Tokyo time to London time.") == ["Asia/Tokyo", "Europe/London"]
    assert named_zones("Remember that Anna's birthday is on May 3rd.") == []


def test_a_zone_the_user_did_not_name_is_replaced_by_the_place_they_did():
    said = "Convert 17:00 Tokyo time to London time."
    sent = {"source_timezone": "UTC", "time": "17:00", "target_timezone": "Europe/London"}
    assert repair_zones(MCP, sent, said) == {**sent, "source_timezone": "Asia/Tokyo"}
    # places written as the user said them become IANA names; the order said fills wrong ones
    both_wrong = {"source_timezone": "Europe/Tokyo", "time": "8:00", "target_timezone": "UTC"}
    assert repair_zones(MCP, both_wrong, said) == {**both_wrong, "source_timezone": "Asia/Tokyo",
                                                  "target_timezone": "Europe/London"}  # fmt: skip
    city = {"source_timezone": "tokyo", "time": "17:00", "target_timezone": "london"}
    assert repair_zones(MCP, city, said) == {**city, "source_timezone": "Asia/Tokyo",
                                            "target_timezone": "Europe/London"}  # fmt: skip


def test_a_conversion_starts_from_the_place_named_at_the_stated_time():
    zones = ("source_timezone", "target_timezone")
    for said, source, target in [
        ("Convert 17:00 Tokyo time to London time.", "Asia/Tokyo", "Europe/London"),
        ("What time is it in Tokyo when it is 9 am in London?", "Europe/London", "Asia/Tokyo"),
        ("If it's 8 am in New York, what time is it in Paris?", "America/New_York", "Europe/Paris"),
    ]:
        assert stated_source(said) == source
        right = {"source_timezone": source, "time": "09:00", "target_timezone": target}
        swapped = {**right, "source_timezone": target, "target_timezone": source}
        assert repair_zones(MCP, swapped, said) == right, said
        assert repair_zones(MCP, right, said) == right
        one_guessed = {**swapped, "source_timezone": "UTC"}  # filled in, then turned round
        assert {k: repair_zones(MCP, one_guessed, said)[k] for k in zones} == {k: right[k] for k in zones}
    # without a stated time nothing says which is the source: as written
    plain = {"source_timezone": "Europe/London", "time": "09:00", "target_timezone": "Asia/Tokyo"}
    assert stated_source("Tokyo or London, which is ahead?") is None
    assert repair_zones(MCP, plain, "Tokyo or London, which is ahead?") == plain


def test_nothing_changes_without_a_named_place_or_for_the_built_in_clock():
    sent = {"source_timezone": "UTC", "time": "17:00", "target_timezone": "Europe/London"}
    # "here" names no place: UTC stays, London was said
    assert repair_zones(MCP, sent, "What is 17:00 here in London time?") == sent
    assert repair_zones(tool({}), sent, "Convert 17:00 Tokyo time to London time.") == sent


async def test_the_chat_loop_runs_the_repaired_call():
    from iris_voice.config import LlmConfig
    from iris_voice.conversation.chat import ChatLoop
    from iris_voice.conversation.history import Bounds, Conversation
    from iris_voice.conversation.responder import Assistant, ask
    from iris_voice.tools.registry import ToolRegistry
    from tests.support.fakes import ScriptedBackend

    ran = []

    async def convert(**arguments: object) -> str:
        ran.append(arguments)
        return "17:00 in Tokyo is 08:00 in London."

    mcp = Tool(ToolSpec("time/convert_time", "Convert", CONVERT), convert, meta={"server": "time"})
    sent = {"source_timezone": "UTC", "time": "17:00", "target_timezone": "Europe/London"}
    backend = ScriptedBackend([("time/convert_time", sent)], "It is 08:00 in London.")
    loop = ChatLoop(backend, ToolRegistry([mcp]), LlmConfig())
    trace = await ask(Assistant(loop, Conversation(Bounds())), "Convert 17:00 Tokyo time to London time.")
    assert ran == [{**sent, "source_timezone": "Asia/Tokyo"}]
    assert trace.tool_calls[0]["arguments"]["source_timezone"] == "Asia/Tokyo"
