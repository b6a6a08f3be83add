"""llama.cpp tuned to promptgen's calls: many short structured answers over long prompts
that calls of one stage share.

`Engine` is llama-cpp-python's `Llama` with two parts replaced (the package is pinned in
`pyproject.toml`; `tests/llm/test_llama_engine.py` holds each part to what it promises):

- **Prefix states** (`PrefixStates`): after every call's prompt is read, and after the
  call, the context's KV cells are kept, keyed by their tokens, up to a byte budget; a
  call starts from the kept state that shares the longest prefix with its prompt.
  llama-cpp-python alone reuses only the previous call's prefix, so two judges taking
  turns (the compliance judge and a sample's own) read their whole prompts every time.
  A call whose prompt shares at least `WAIT_GAIN` more tokens with a prompt another
  context is reading now than with any kept state waits for that read (its core given
  to the reader) and starts from its state: two calls of one stage started at once
  read their shared instructions once, not twice at half the speed each.
- **Grammar on few tokens** (`GrammarLast`): greedy, the answer's JSON grammar is applied
  to the one token the sampler chose, and to the whole vocabulary only when that token
  breaks it; sampled, to the best tokens in order until `top_k` are allowed, the chain
  then run on those. Either way the answer is the one llama.cpp gives with the grammar
  applied first, token for token. Applied first, it walks all 151,936 tokens of a Qwen
  vocabulary at every step: 33 ms a token on 2 cores, close to the 1.5B model's forward
  pass.

Prompt-lookup decoding was measured and left out: on 2 cores a batch of 2 tokens costs
1.7 times one token and a batch of 9 four times, so proposals must be long and right to
pay, and a judge's answers repeat JSON keys whose continuations differ (the judge of
`bench/local.py` took 79 s with it, 51 s without; docs/performance.md).
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

import llama_cpp
import numpy as np
import numpy.typing as npt
from llama_cpp import llama_cpp as lib

from promptgen.llm.contexts import Cores

# Kept KV states per model (all its contexts together), in bytes (a 1.5B model's
# 1,000-token state is about 28 MB).
STATES_BYTES = 384 << 20
# A call waits for a prompt being read that shares this many more tokens with its own
# than the best kept state (reading them at a core alone takes about 2.5 s for the
# 1.5B model on this project's 2-core machine) ...
WAIT_GAIN = 64
# ... for at most this long (a read that never ends is not waited for).
WAIT_AT_MOST = 300.0
# A prompt is read this many tokens at a time, its threads set before each part.
READ_PART = 128
# Tokens a sampled call's grammar checks in order of logit for its top_k allowed ones.
SCAN = 256


@dataclass
class Saved:
    """One kept state: the tokens whose KV cells it holds and the cells themselves."""

    input_ids: npt.NDArray[np.intc]
    n_tokens: int
    data: Any  # ctypes array of bytes (llama_state_seq_get_data)
    size: int


class PrefixStates:
    """Kept KV states of one model, least recently used dropped first past the budget.
    Looked up by the prompt's tokens: the state that shares the longest prefix. Shared
    by the model's contexts (a state is the same model's cells, whichever context made
    it), so a call on a second context starts from what the first one read. Knows the
    prompts being read now (`lookup` to `read`), so a call can wait for one."""

    def __init__(self, capacity: int = STATES_BYTES) -> None:
        self.capacity = capacity
        self.states: OrderedDict[tuple[int, ...], Saved] = OrderedDict()
        self.reading: dict[int, npt.NDArray[np.intc]] = {}  # reader -> its prompt
        self._lock = threading.Lock()  # contexts compute in threads of their own
        self._read = threading.Condition(self._lock)

    def __bool__(self) -> bool:  # llama-cpp-python asks `if self.cache:`
        return True

    @property
    def size(self) -> int:
        return sum(s.size for s in self.states.values())

    def _best(self, tokens: Any) -> tuple[tuple[int, ...] | None, int]:
        best, shared = None, 0
        for key, saved in self.states.items():
            n = common_prefix(saved.input_ids, tokens)
            if n > shared:
                best, shared = key, n
        return best, shared

    def __getitem__(self, tokens: Any) -> Saved:
        with self._lock:
            best, _ = self._best(tokens)
            if best is None:
                raise KeyError("no kept state shares a prefix")
            self.states.move_to_end(best)
            return self.states[best]

    def lookup(
        self, tokens: Any, reader: int, idle: Callable[[], AbstractContextManager[Any]]
    ) -> Saved:
        """The kept state for `tokens`, after waiting (inside `idle`) for a prompt being
        read that shares WAIT_GAIN more tokens with them; `reader` is then reading."""
        prompt = np.asarray(tokens, dtype=np.intc)
        deadline = time.monotonic() + WAIT_AT_MOST
        with self._read:
            while True:
                best, kept = self._best(prompt)
                ahead = max((common_prefix(r, prompt) for r in self.reading.values()), default=0)
                left = deadline - time.monotonic()
                if ahead < kept + WAIT_GAIN or left <= 0:
                    break
                with idle():
                    self._read.wait(left)
            self.reading[reader] = prompt
            if best is None:
                raise KeyError("no kept state shares a prefix")
            self.states.move_to_end(best)
            return self.states[best]

    def read(self, reader: int) -> None:
        """`reader` has read its prompt (or given up): calls waiting for it go on."""
        with self._read:
            if self.reading.pop(reader, None) is not None:
                self._read.notify_all()

    def __setitem__(self, tokens: Any, saved: Saved) -> None:
        key = tuple(int(t) for t in saved.input_ids)
        with self._lock:
            self.states.pop(key, None)
            # a state whose tokens begin the new one's serves no lookup the new one
            # does not serve as well (a prompt's state, once its answer is kept too)
            for old in [k for k in self.states if len(k) < len(key) and key[: len(k)] == k]:
                del self.states[old]
            self.states[key] = saved
            while self.size > self.capacity and len(self.states) > 1:
                self.states.popitem(last=False)


class _Lookup:
    """What llama-cpp-python reads as its cache: the model's kept states, looked up on
    behalf of one context (which may wait, idle, for another's read)."""

    def __init__(self, states: PrefixStates, engine: Engine) -> None:
        self.states, self.engine = states, engine

    def __bool__(self) -> bool:
        return True

    def __getitem__(self, tokens: Any) -> Saved:
        return self.states.lookup(tokens, id(self.engine), self.engine.idle)

    def __setitem__(self, tokens: Any, saved: Saved) -> None:
        self.states[tokens] = saved


def common_prefix(a: Any, b: Any) -> int:
    """How many leading tokens `a` and `b` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    left, right = np.asarray(a[:n]), np.asarray(b[:n])
    differ = np.flatnonzero(left != right)
    return int(differ[0]) if len(differ) else n


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class GrammarLast:
    """A sampler that applies the grammar to as few tokens as gives the choice llama.cpp
    makes with the grammar applied to the whole vocabulary first.

    Greedy (`top_k` 0): the chain chooses a token and the grammar checks that one; only a
    token the grammar refuses costs a pass over the whole vocabulary, then the chain again.
    Sampled (`top_k` > 0, no penalties): the grammar checks the tokens in order of logit
    until it has `top_k` it allows, and the chain (truncation, temperature, draw) runs on
    those: the candidates, their order and the draw are the ones the grammar-first chain
    has, so the answer is the same token for token. (Choosing first and checking after
    gave another draw and, through the truncation, another distribution: the suites the
    1.5B wrote that way were rated worse, docs/performance.md.) Fewer than `top_k` allowed
    among the SCAN best: the whole vocabulary is checked."""

    def __init__(self, chain: Any, grammar: Any, llama: Engine, top_k: int = 0) -> None:
        self.chain = chain  # llama_cpp._internals.LlamaSampler without the grammar
        self.top_k = top_k
        vocab = llama._model.vocab
        self.grammar = lib.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        self.n_vocab = llama.n_vocab()
        self.data = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        self.ids = np.arange(self.n_vocab, dtype=np.int32)
        self.one = (lib.llama_token_data * 1)()
        self.refused = 0  # tokens the grammar sent back to the whole vocabulary

    def _apply(self, logits: npt.NDArray[np.float32], grammar: bool) -> int:
        self.data["id"] = self.ids
        self.data["logit"] = logits
        self.data["p"] = 0.0
        cur = lib.llama_token_data_array(
            data=self.data.ctypes.data_as(lib.llama_token_data_p),
            size=self.n_vocab,
            selected=-1,
            sorted=False,
        )
        if grammar:
            lib.llama_sampler_apply(self.grammar, ctypes.byref(cur))
        lib.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        return int(cur.data[cur.selected].id)

    def _allowed(self, token: int) -> bool:
        self.one[0] = lib.llama_token_data(token, 1.0, 0.0)
        cur = lib.llama_token_data_array(data=self.one, size=1, selected=-1, sorted=False)
        lib.llama_sampler_apply(self.grammar, ctypes.byref(cur))
        return not math.isinf(self.one[0].logit)

    def _apply_allowed(self, logits: npt.NDArray[np.float32]) -> int | None:
        """The chain on the `top_k` best tokens the grammar allows (None: fewer than
        `top_k` among the SCAN best, so the whole vocabulary must be checked)."""
        best = np.argpartition(-logits, SCAN)[:SCAN]
        best = best[np.argsort(-logits[best], kind="stable")]
        allowed: list[int] = []
        for token in best:
            if self._allowed(int(token)):
                allowed.append(int(token))
                if len(allowed) == self.top_k:
                    break
        else:
            return None
        picked = self.data[: self.top_k]
        picked["id"] = allowed
        picked["logit"] = logits[allowed]
        picked["p"] = 0.0
        cur = lib.llama_token_data_array(
            data=picked.ctypes.data_as(lib.llama_token_data_p),
            size=self.top_k,
            selected=-1,
            sorted=True,
        )
        lib.llama_sampler_apply(self.chain.sampler, ctypes.byref(cur))
        return int(cur.data[cur.selected].id)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        pointer = lib.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        if self.top_k:
            chosen = self._apply_allowed(logits)
            if chosen is None:
                self.refused += 1
                chosen = self._apply(logits, grammar=True)
            lib.llama_sampler_accept(self.grammar, chosen)
            lib.llama_sampler_accept(self.chain.sampler, chosen)
            return chosen
        token = self._apply(logits, grammar=False)
        if not self._allowed(token):
            self.refused += 1
            token = self._apply(logits, grammar=True)
        lib.llama_sampler_accept(self.grammar, token)
        lib.llama_sampler_accept(self.chain.sampler, token)
        return token

    def close(self) -> None:
        if self.grammar is not None:
            lib.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self) -> None:
        self.close()


class Engine(llama_cpp.Llama):
    """`Llama` with kept prefix states, the grammar applied last, prompt lookup and
    logits only where sampled (module docstring)."""

    def __init__(
        self,
        *,
        cores: Cores | None = None,
        states: PrefixStates | int = STATES_BYTES,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.cores = cores
        self.threads = int(kwargs.get("n_threads") or 1)
        self.states = states if isinstance(states, PrefixStates) else PrefixStates(states)
        self.cache = cast(Any, _Lookup(self.states, self))  # llama-cpp-python indexes it
        self.prompt_read = 0  # prompt tokens the last call had to read
        self._reading = False

    def begin(self) -> None:
        """Mark a call's start: its first `eval` is its prompt's (what was not kept)."""
        self.prompt_read = 0
        self._reading = True

    def end(self) -> None:
        """Mark a call's end (whether or not its prompt was read)."""
        self._reading = False
        self.states.read(id(self))

    def idle(self) -> AbstractContextManager[Any]:
        """This context not computing (waiting for another's read): its core lent."""
        return self.cores.waiting() if self.cores is not None else nullcontext()

    def eval(self, tokens: Any) -> None:
        if not self._reading:
            self._share()
            super().eval(tokens)
            return
        self.prompt_read, self._reading = len(tokens), False
        try:
            # read in parts, the threads re-read before each: a call that waits for
            # this read lends its core to it
            for start in range(0, len(tokens), READ_PART):
                self._share()
                super().eval(tokens[start : start + READ_PART])
            if len(tokens) >= WAIT_GAIN:  # the prompt is kept before the answer is written
                self.states[None] = self.save_state()
        finally:
            self.states.read(id(self))

    def _share(self) -> None:
        share = self.cores.share() if self.cores is not None else self.threads
        if share != self.threads:
            lib.llama_set_n_threads(self._ctx.ctx, share, share)
            self.threads = share

    def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]
        grammar = kwargs.pop("grammar", None)
        if grammar is None:
            return super()._init_sampler(**kwargs)
        if float(kwargs.get("temp", 0.8)) <= 0:  # greedy: the chosen token checked
            return GrammarLast(super()._init_sampler(**kwargs), grammar, self)
        plain = (
            kwargs.get("repeat_penalty", 1.0) == 1.0
            and not kwargs.get("frequency_penalty")
            and not kwargs.get("presence_penalty")
            and not kwargs.get("mirostat_mode")
            and kwargs.get("logits_processor") is None
            and 0 < int(kwargs.get("top_k", 40)) <= SCAN
        )
        if not plain:  # penalties or another draw reorder the vocabulary: llama.cpp's own
            return super()._init_sampler(**kwargs, grammar=grammar)
        chain = super()._init_sampler(**kwargs)
        return GrammarLast(chain, grammar, self, top_k=int(kwargs.get("top_k", 40)))

    def save_state(self) -> Saved:  # type: ignore[override]
        ctx = self._ctx.ctx
        size = int(lib.llama_state_seq_get_size(ctx, 0))
        data = (ctypes.c_uint8 * size)()
        written = int(lib.llama_state_seq_get_data(ctx, data, size, 0))
        return Saved(self.input_ids[: self.n_tokens].copy(), self.n_tokens, data, written)

    def load_state(self, state: Any) -> None:
        self._ctx.kv_cache_seq_rm(-1, 0, -1)
        if int(lib.llama_state_seq_set_data(self._ctx.ctx, state.data, state.size, 0)) == 0:
            self.n_tokens = 0  # not restored: the prompt is read in full
        else:
            self.input_ids[: state.n_tokens] = state.input_ids
            self.n_tokens = state.n_tokens
        self._requires_eval = True
