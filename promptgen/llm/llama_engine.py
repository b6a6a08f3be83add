"""llama.cpp tuned to promptgen's calls: many short structured answers over long prompts
that calls of one stage share.

`Engine` is llama-cpp-python's `Llama` with two parts replaced (the package is pinned in
`pyproject.toml`; `tests/llm/test_llama_engine.py` holds each part to what it promises):

- **Prefix states** (`PrefixStates`): after every call the context's KV cells are kept,
  keyed by their tokens, up to a byte budget; a call starts from the kept state that
  shares the longest prefix with its prompt. llama-cpp-python alone reuses only the
  previous call's prefix, so two judges taking turns (the compliance judge and a sample's
  own) read their whole prompts every time.
- **Grammar last** (`GrammarLast`): the answer's JSON grammar is applied to the one token
  the sampler chose, and to the whole vocabulary only when that token breaks it (as
  llama.cpp's own sampler does). Applied first, it walks all 151,936 tokens of a Qwen
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
from collections import OrderedDict
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
    it), so a call on a second context starts from what the first one read."""

    def __init__(self, capacity: int = STATES_BYTES) -> None:
        self.capacity = capacity
        self.states: OrderedDict[tuple[int, ...], Saved] = OrderedDict()
        self._lock = threading.Lock()  # contexts compute in threads of their own

    def __bool__(self) -> bool:  # llama-cpp-python asks `if self.cache:`
        return True

    @property
    def size(self) -> int:
        return sum(s.size for s in self.states.values())

    def __getitem__(self, tokens: Any) -> Saved:
        with self._lock:
            best, shared = None, 0
            for key, saved in self.states.items():
                n = common_prefix(saved.input_ids, tokens)
                if n > shared:
                    best, shared = key, n
            if best is None:
                raise KeyError("no kept state shares a prefix")
            self.states.move_to_end(best)
            return self.states[best]

    def __setitem__(self, tokens: Any, saved: Saved) -> None:
        key = tuple(int(t) for t in saved.input_ids)
        with self._lock:
            self.states.pop(key, None)
            self.states[key] = saved
            while self.size > self.capacity and len(self.states) > 1:
                self.states.popitem(last=False)


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
    """A sampler that lets the chain (penalties, truncation, temperature, draw) choose a
    token first and applies the grammar to that token alone; only a token the grammar
    refuses costs a pass of the grammar over the whole vocabulary, then the chain again.
    Greedy choices are the same as with the grammar applied first; sampled ones have the
    same distribution."""

    def __init__(self, chain: Any, grammar: Any, llama: Engine) -> None:
        self.chain = chain  # llama_cpp._internals.LlamaSampler without the grammar
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

    def sample(self, ctx: Any, idx: int = -1) -> int:
        pointer = lib.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
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
        kept = states if isinstance(states, PrefixStates) else PrefixStates(states)
        self.cache = cast(Any, kept)  # duck-typed: llama-cpp-python indexes it
        self.prompt_read = 0  # prompt tokens the last call had to read
        self._reading = False

    def begin(self) -> None:
        """Mark a call's start: its first `eval` is its prompt's (what was not kept)."""
        self.prompt_read = 0
        self._reading = True

    def eval(self, tokens: Any) -> None:
        if self._reading:
            self.prompt_read, self._reading = len(tokens), False
        share = self.cores.share() if self.cores is not None else self.threads
        if share != self.threads:
            lib.llama_set_n_threads(self._ctx.ctx, share, share)
            self.threads = share
        super().eval(tokens)

    def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]
        grammar = kwargs.pop("grammar", None)
        chain = super()._init_sampler(**kwargs)
        return chain if grammar is None else GrammarLast(chain, grammar, self)

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
