import asyncio, sys, json, tempfile
from iris_voice.config import Config, LlmConfig, ToolsConfig, AudioConfig, SttConfig, TtsConfig
from iris_voice.app.filemode import FileTurns
from tools.testbed.servers import start_server
from tools.testbed.fixtures import fixture
import logging
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
for n in ("iris_voice.speech.endpoint",): logging.getLogger(n).setLevel(logging.DEBUG)
names = sys.argv[1:]
async def main(url):
    tmp = tempfile.mkdtemp()
    cfg = Config(llm=LlmConfig(host=url, temperature=0.0), tools=ToolsConfig(timezone="UTC", timers_db=f"{tmp}/t.db"))
    turns = FileTurns(cfg)
    await turns.warmup()
    for name in names:
        turns.responder.conversation.reset()
        (row,) = await turns.run(fixture(f"bench_{name}"))
        t = row["timings_ms"]
        print(name, row["first_audio_ms"], {k: t.get(k) for k in ("vad_hangover","stt","stt_partials","stt_speculations","stt_speculated","speculative","llm_first_token","first_sentence","tts_first_audio")}, row.get("execution_path"), repr(row["reply"][:60]))
with start_server() as s:
    asyncio.run(main(s.url))
