"""The llama.cpp side of IRIS's Ollama-protocol test server: one model, one worker thread.

Split from ``ollama_server.py`` so the HTTP layer and the model runner stay small.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.testbed import ollama_proto as proto
from tools.testbed import ollama_replies as replies

log = logging.getLogger("ollama_server")


@dataclass(frozen=True)
class Job:
    """One chat generation, as handed to the :class:`Engine`."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    options: proto.ChatOptions
    t_request: float
    """``perf_counter()`` when the request arrived: load and total durations count from here."""
    think: bool | str | None = None
    """The request's ``think`` (the scripted engine records it)."""
    format: str | dict[str, Any] | None = None
    """``"json"`` or a JSON Schema the reply must follow (a llama.cpp grammar, as Ollama does)."""


class _TokenClock:
    """A llama stopping criterion that never stops: it counts sampled tokens and notes when
    the first one was sampled (the end of prompt evaluation)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: float | None = None

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        self.count += 1
        if self.first is None:
            self.first = time.perf_counter()
        return False


class Engine:
    """One llama.cpp model behind one lock, used only from a single worker thread.

    The event loop never runs the model: a generation runs in the worker and hands its
    pieces to the request's asyncio queue with ``call_soon_threadsafe``.
    """

    def __init__(self, model_path: Path, *, n_ctx: int, threads: int) -> None:
        import llama_cpp  # heavy (loads libllama); only the server process needs it

        self._llama_cpp = llama_cpp
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._active: dict[threading.Event, asyncio.Queue] = {}  # for cancel_all
        self._grammars: dict[str, Any] = {}  # compiled per format
        self.model_path, self.threads, self.default_ctx = model_path, threads, n_ctx
        st = model_path.stat()
        self.size, self.modified = st.st_size, st.st_mtime
        self.llm: Any = None
        self.n_ctx = 0
        self._load(n_ctx)
        self.metadata: dict[str, str] = dict(self.llm.metadata)
        self.template = proto.ChatTemplate(self.metadata["tokenizer.chat_template"])
        arch = self.metadata.get("general.architecture", "")
        self.ctx_train = int(self.metadata.get(f"{arch}.context_length", n_ctx))
        self.n_params = int(llama_cpp.llama_model_n_params(self.llm.model))

    def _load(self, n_ctx: int) -> float:
        t = time.perf_counter()
        if self.llm is not None:
            self.llm.close()  # free the old weights and KV cache first: never two copies in memory
            self.llm = None
        self.llm = self._llama_cpp.Llama(
            str(self.model_path),
            n_ctx=n_ctx,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            n_batch=512,
            verbose=False,
        )
        self.n_ctx = n_ctx
        dt = time.perf_counter() - t
        log.info("loaded %s (n_ctx=%d) in %.2f s", self.model_path.name, n_ctx, dt)
        return dt

    def cancel_all(self) -> None:
        """Stop every generation (at shutdown): workers stop at their next token and each
        waiting request gets an error line now rather than when the worker notices."""
        for stop, queue in list(self._active.items()):
            stop.set()
            queue.put_nowait(("error", "server is shutting down"))
            queue.put_nowait(("end", None))

    def close(self, timeout: float) -> bool:
        """Stop generating and free the model; ``False`` if the worker is still busy after ``timeout``."""
        for stop in list(self._active):  # the loop is gone: only the workers need telling
            stop.set()
        self._worker.shutdown(wait=False, cancel_futures=True)
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            self.llm.close()
        finally:
            self._lock.release()
        return True

    async def stream(self, job: Job) -> AsyncIterator[tuple[str, Any]]:
        """Run ``job`` in the worker; yield ``("text", delta)``, then ``("done", stats)`` or
        ``("error", message)``. Leaving the iteration early stops the generation."""
        loop = asyncio.get_running_loop()
        # Unbounded yet bounded: one item per generated token, so never more than n_ctx items.
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def emit(kind: str, value: Any = None) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the loop is closed: nobody is listening any more
                stop.set()

        def work() -> None:
            try:
                self._generate(job, emit, stop)
            except Exception as exc:
                log.exception("generation failed")
                emit("error", f"{type(exc).__name__}: {exc}")
            finally:
                emit("end")

        self._active[stop] = queue
        loop.run_in_executor(self._worker, work)
        try:
            while (item := await queue.get())[0] != "end":
                yield item
        finally:
            stop.set()  # finished, failed or the client went away: the worker stops at its next token
            self._active.pop(stop, None)

    def _generate(self, job: Job, emit: Any, stop: threading.Event) -> None:
        with self._lock:
            if stop.is_set():
                return
            opts = job.options
            n_ctx = min(max(opts.num_ctx or self.default_ctx, 256), self.ctx_train)
            if n_ctx != self.n_ctx:
                self._load(n_ctx)  # Ollama restarts the runner when num_ctx changes; so do we
            tokens = self._prompt_tokens(job)
            cached = self._cached_prefix(tokens)
            clock = _TokenClock()
            t_start = time.perf_counter()
            if not self._prefill(tokens, cached, stop):
                log.info("prompt of %d tokens (%d cached): the client left", len(tokens), cached)
                return
            # One Llama for every request: create_completion reuses the longest common prefix of
            # the KV cache, which is what makes the second turn of a conversation cheap.
            stream = self.llm.create_completion(
                tokens,
                max_tokens=opts.num_predict or -1,
                temperature=opts.temperature,
                top_p=opts.top_p,
                top_k=opts.top_k,
                min_p=opts.min_p,
                repeat_penalty=opts.repeat_penalty,
                seed=opts.seed,
                stop=list(opts.stop),
                stream=True,
                stopping_criteria=self._llama_cpp.StoppingCriteriaList([clock]),
                grammar=self._grammar(job.format),
            )
            reason = "stop"
            try:
                for chunk in stream:
                    choice = chunk["choices"][0]
                    if choice["text"]:
                        emit("text", choice["text"])
                    reason = choice.get("finish_reason") or reason
                    if stop.is_set():
                        break
            finally:
                stream.close()
            t_end = time.perf_counter()
        t_first = clock.first or t_end
        evaluated = len(tokens) - cached
        # In streaming mode llama-cpp-python samples one token past max_tokens before it stops.
        generated = min(clock.count, opts.num_predict or clock.count)
        log.info(
            "prompt %d tokens (%d cached, %d evaluated in %.2f s), %d generated in %.2f s (%.1f tok/s), %s",
            len(tokens),
            cached,
            evaluated,
            t_first - t_start,
            generated,
            t_end - t_first,
            generated / max(t_end - t_first, 1e-9),
            reason,
        )
        emit(
            "done",
            {
                "done_reason": reason,
                "load_duration": replies.ns(t_start - job.t_request),
                "prompt_eval_count": evaluated,
                "prompt_eval_duration": replies.ns(t_first - t_start),
                "eval_count": generated,
                "eval_duration": replies.ns(t_end - t_first),
            },
        )

    def _grammar(self, fmt: str | dict[str, Any] | None) -> Any:
        """The llama.cpp grammar for a request's ``format`` (compiled once per schema)."""
        if fmt is None:
            return None
        # The keys keep their order: Ollama hands the schema to llama.cpp as written, and the
        # grammar writes properties in that order (the choice's "tool" before its answer).
        key = fmt if isinstance(fmt, str) else json.dumps(fmt)
        if key not in self._grammars:
            grammar = self._llama_cpp.LlamaGrammar
            self._grammars[key] = (
                grammar.from_string(self._llama_cpp.llama_grammar.JSON_GBNF, verbose=False)
                if fmt == "json"
                else grammar.from_json_schema(key, verbose=False)
            )
        return self._grammars[key]

    def _tokenize(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        text = self.template.render(messages, tools)
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _prompt_tokens(self, job: Job) -> list[int]:
        """Render and tokenize, truncating like Ollama when the prompt does not fit."""
        limit = self.n_ctx - min(512, self.n_ctx // 8)  # leave room to answer
        tokens = self._tokenize(job.messages, job.tools)
        msgs = job.messages
        # Ollama's chatPrompt: drop the oldest messages but keep system messages and the last one.
        for start in range(1, len(msgs)):
            if len(tokens) <= limit:
                break
            kept = [m for m in msgs[:start] if m["role"] == "system"] + msgs[start:]
            tokens = self._tokenize(kept, job.tools)
        if len(tokens) > limit:
            # Then the runner's cut: keep a few leading tokens and the tail. This is how an
            # overflow silently loses the system prompt and the tool definitions.
            log.warning("prompt of %d tokens exceeds num_ctx %d: truncating", len(tokens), self.n_ctx)
            tokens = tokens[:4] + tokens[len(tokens) - (limit - 4) :]
        return tokens

    def _prefill(self, tokens: list[int], cached: int, stop: threading.Event) -> bool:
        """Evaluate the prompt after its cached prefix batch by batch, as Ollama's runner
        does, and give up between batches once the client went away (False): what was
        evaluated stays in the cache for the next request. The last token is left to
        ``create_completion``, which then finds everything before it cached."""
        llm = self.llm
        end = len(tokens) - 1
        if cached >= end:
            return True
        llm._ctx.kv_cache_seq_rm(-1, cached, -1)  # drop the diverging rest, as generate() would
        llm.n_tokens = cached
        for i in range(cached, end, llm.n_batch):
            if stop.is_set():
                return False
            llm.eval(tokens[i : min(end, i + llm.n_batch)])
        return not stop.is_set()

    def _cached_prefix(self, tokens: list[int]) -> int:
        """How many leading prompt tokens llama-cpp-python will take from the KV cache
        (same rule as ``Llama.generate``: a fully cached prompt still re-evaluates its last token)."""
        n = 0
        for a, b in zip(self.llm.input_ids[: self.llm.n_tokens].tolist(), tokens, strict=False):
            if a != b:
                break
            n += 1
        return n - 1 if n == len(tokens) and n > 0 else n
