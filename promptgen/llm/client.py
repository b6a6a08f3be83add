"""The one LLM gateway: `await llm.complete(messages, model=..., output=...)`.

It owns alias resolution, the response cache, per-model concurrency limits, retries
with backoff (honouring Retry-After), a faulty reply (empty or cut off) asked again as
the same request, structured output with one repair turn for a well-formed answer that
fails validation, and usage accounting. Failures come back as data (`Completion.error`),
never raised through the run; only configuration problems (unknown model, missing key)
raise.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack, overload

from pydantic import BaseModel

from promptgen.llm import structured
from promptgen.llm.backend import DEFAULT_CEILING, DEFAULT_CONCURRENCY, Backend
from promptgen.llm.batch import BatchAPI, current_label
from promptgen.llm.batcher import Attempt, Batcher
from promptgen.llm.cache import ResponseCache
from promptgen.llm.choices import candidates
from promptgen.llm.config import GatewaySettings, load_settings
from promptgen.llm.limits import Bounds, Limits, global_cap
from promptgen.llm.negotiate import again_if_faulty, negotiate
from promptgen.llm.profiles import profile_for
from promptgen.llm.refusals import Key, SchemaModes, lower, strict_error
from promptgen.llm.replies import (
    RetryPolicy,
    parse,
    text_completion,
    with_schema,
    without_redacted,
)
from promptgen.llm.routing import backend_type
from promptgen.llm.types import (
    Call,
    CallOptions,
    ChatRequest,
    CompleteOptions,
    Completion,
    M,
    Messages,
)
from promptgen.llm.usage import UsageTracker
from promptgen.llm.weights import cache_root
from promptgen.results import BatchJob, SchemaRefusal, Usage
from promptgen.secrets import register_environment, register_mapping


class LLM:
    def __init__(
        self,
        settings: GatewaySettings | None = None,
        *,
        retry: RetryPolicy | None = None,
        global_limit: int | None = None,
        start_limit: int | None = None,
    ) -> None:
        self.settings = settings or load_settings()
        register_environment()  # provider keys, so no error text quotes them (docs/llm.md)
        self.retry = retry or RetryPolicy()
        # Where a model's limit starts (a benchmark may start it wider than the default).
        self.start_limit = start_limit or DEFAULT_CONCURRENCY
        ceiling = self.settings.concurrency or DEFAULT_CEILING
        self.limits = Limits(global_limit or global_cap(ceiling))
        self.usage = UsageTracker()
        self.cache: ResponseCache | None = None
        if self.settings.cache:
            folder = self.settings.cache_dir or cache_root() / "responses"
            self.cache = ResponseCache(Path(folder))
        self._backends: dict[type[Backend], Backend] = {}
        self._checked: set[str] = set()
        self._modes: dict[str, str] = {}  # model -> its mode (json_schema where supported)
        self._schema_modes = SchemaModes()  # (model, schema) -> a mode after a refusal
        # The refusals this gateway's calls met (a run of a batch: its own), in order.
        self.schema_refusals: list[SchemaRefusal] = []
        self._refusals_met: set[Key] = set()
        self._one_choice: set[str] = set()  # models whose server refused `n`
        self._profiles: dict[str, str | None] = {}  # model id -> its provider profile
        self._loop: asyncio.AbstractEventLoop | None = None
        self._root: LLM = self
        self._batcher: Batcher | None = None
        # Cache key -> set when the call making it is over: an identical request waits
        # for it and takes its answer from the cache, so the calls made never depend on
        # which of two identical requests (two runs with one output) went first.
        self._flying: dict[str, asyncio.Event] = {}

    def for_run(self, strict_output: bool | None = None) -> LLM:
        """A gateway for one run of a batch: this gateway's cache, limits, HTTP clients,
        retry policy and schema refusals, with its own usage account and record of the
        refusals its calls met, so each run's context counts only its own calls while
        every run draws on one concurrency budget; `strict_output`: that run's own
        --strict-output. Closing it closes nothing: the gateway it came from owns what
        they share."""
        child = copy.copy(self)
        child.usage = UsageTracker()
        child.schema_refusals, child._refusals_met = [], set()
        if strict_output is not None and strict_output != self.settings.strict_output:
            child.settings = replace(self.settings, strict_output=strict_output)
        return child

    def _bind_loop(self) -> None:
        """Limits and HTTP clients belong to one event loop; a new loop gets new ones."""
        root = self._root
        if root is not self:  # a run of a batch: the shared gateway's, whatever it binds
            root._bind_loop()
            self.limits, self._loop = root.limits, root._loop
            return
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A backend made before the first call (the run's credential check) has opened
            # no connection yet: it is kept, not built again (an HTTP client loads the CA
            # certificates, ~40 ms). Only those a previous loop used are dropped.
            first = self._loop is None
            self._loop = loop
            self.limits = Limits(self.limits.global_limit)
            self._flying.clear()
            for kind in [k for k in self._backends if k.policy.per_loop and not first]:
                del self._backends[kind]

    # -- model routing ---------------------------------------------------------------

    def backend_for(self, model_id: str) -> tuple[Backend, str]:
        """The backend that owns `model_id` and the model's name there (checked once)."""
        api_base = self.settings.api_base
        kind = backend_type(model_id, api_base)
        name = kind.model_name(model_id)
        backend = self._backends.get(kind)
        if backend is None:
            backend = self._backends[kind] = kind.create(api_base)
        if model_id not in self._checked:
            backend.check_credentials(name)
            self._checked.add(model_id)
        return backend, name

    def stores_completions(self, model: str) -> bool:
        """Whether `model` (an alias or id) is served by a provider that stores
        completions asked with `store=True` (OpenAI, Azure OpenAI, a compatible server)."""
        backend, name = self.backend_for(self.settings.resolve(model))
        return backend.stores_completions(name)

    def unsent(self, model: str, params: Mapping[str, Any]) -> list[str]:
        """The call parameters among `params` that `model`'s backend cannot be sent
        (BackendPolicy.takes), sorted; [] when it takes them all."""
        backend, _ = self.backend_for(self.settings.resolve(model))
        takes = backend.policy.takes
        if takes is None:
            return []
        return sorted(name for name in params if name not in takes)

    def profile_of(self, backend: Backend, model_id: str) -> str | None:
        """The provider profile `model_id`'s own schemas are shaped to (llm/profiles.py);
        None for a backend that constrains decoding with a grammar."""
        if model_id not in self._profiles:
            profile = None
            if backend.policy.structured_mode != "grammar":
                api_base = self.settings.api_base if backend.policy.uses_api_base else None
                profile = profile_for(model_id, api_base, self.settings.profile)
            self._profiles[model_id] = profile
        return self._profiles[model_id]

    def concurrency_for(self, backend: Backend, model_id: str = "") -> Bounds:
        """A model's limit: a backend's fixed number (the embedded model: 1), else from 8
        up to --concurrency, learning from the provider's other models: the --api-base
        server, or litellm's provider prefix (llm/adaptive.py)."""
        fixed = backend.policy.concurrency
        if fixed is not None:
            return Bounds(fixed, fixed)
        ceiling = self.settings.concurrency or DEFAULT_CEILING
        api_base = self._api_base(backend)
        provider = api_base if api_base else model_id.partition("/")[0]
        return Bounds(min(self.start_limit, ceiling), ceiling, provider)

    # -- the call --------------------------------------------------------------------

    # The answer's type follows `output`: a pydantic model class parses into an instance
    # of it, and without `output` `parsed` is None; a JSON Schema (a dict) parses into
    # JSON (Any), as does an `output` whose kind is known only at run time.
    @overload
    async def complete(
        self, messages: Messages, *, output: type[M], **options: Unpack[CompleteOptions]
    ) -> Completion[M]: ...

    @overload
    async def complete(
        self, messages: Messages, *, output: None = None, **options: Unpack[CompleteOptions]
    ) -> Completion[None]: ...

    @overload
    async def complete(
        self,
        messages: Messages,
        *,
        output: type[BaseModel] | dict[str, Any] | None,
        **options: Unpack[CompleteOptions],
    ) -> Completion[Any]: ...

    async def complete(
        self,
        messages: Messages,
        *,
        model: str = "rules",
        output: type[BaseModel] | dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        variant: int = 0,
        stage: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Completion[Any]:
        call = Call(messages, model, output, temperature, max_tokens, seed, stage, params)
        call, model_id, backend, name, spec = self._prepare(call)
        key = ""  # only the cache and a provider batch read it: with neither, not computed
        if self.cache is not None or self._batch_api(backend, name) is not None:
            key = call.key(model_id, self._api_base(backend), spec, variant)
        profile = self.profile_of(backend, model_id)
        request = call.request(name, spec, self.settings.timeout, variant, profile=profile)
        hit = await self._after_same(key, model_id, spec, stage)
        if hit is not None:
            return hit
        if self.cache is None:  # --no-cache: every call is made, identical or not
            return await self._ask(key, model_id, backend, request, spec, stage)
        self._flying[key] = asyncio.Event()  # no await since the check: no one else holds it
        try:
            return await self._ask(key, model_id, backend, request, spec, stage)
        finally:
            self._flying.pop(key).set()

    def _prepare(self, call: Call) -> tuple[Call, str, Backend, str, structured.OutputSpec | None]:
        """The call with its secrets registered and redacted parameters dropped, the
        model's id, its backend and name there, and the answer's spec."""
        self._bind_loop()
        if call.params:
            register_mapping(call.params)
            call = replace(call, params=without_redacted(call.params))
        model_id = self.settings.resolve(call.model)
        backend, name = self.backend_for(model_id)
        spec = structured.output_spec(call.output) if call.output is not None else None
        return call, model_id, backend, name, spec

    def _api_base(self, backend: Backend) -> str | None:
        """The API base as part of a cache key: for the backends that use it."""
        return self.settings.api_base if backend.policy.uses_api_base else None

    def _spent(self, model_id: str, stage: str | None, usage: Usage, started: float) -> None:
        """A request's usage, its latency measured from `started`, on the accounts (and
        its span on the timeline, when one is kept)."""
        usage.latency_ms = (time.perf_counter() - started) * 1000
        self.usage.record(model_id, stage, usage)
        if self.usage.timeline is not None:
            self.usage.timeline.append((stage, started, started + usage.latency_ms / 1000))

    async def _after_same(
        self, key: str, model_id: str, spec: structured.OutputSpec | None, stage: str | None
    ) -> Completion | None:
        """The cached answer, once an identical request in flight is over (None: none, or
        that call failed: this one asks itself)."""
        while (flying := self._flying.get(key)) is not None:
            await flying.wait()
        return self._from_cache(key, model_id, spec, stage)

    async def _ask(
        self,
        key: str,
        model_id: str,
        backend: Backend,
        request: ChatRequest,
        spec: structured.OutputSpec | None,
        stage: str | None,
    ) -> Completion:
        """The call itself (a provider batch's line with --batch); a whole answer is cached."""
        started = time.perf_counter()
        name = request.model
        api = self._batch_api(backend, name)
        if api is not None:
            result = await self._batched_call(api, backend, model_id, key, request, spec)
        else:
            result = await self._structured_call(backend, model_id, request, spec)
        self._spent(model_id, stage, result.usage, started)
        result.latency_ms = result.usage.latency_ms
        # Only whole answers are kept: an empty or cut-off reply is asked again next time.
        if result.ok and self.cache is not None and result.text is not None:
            self.cache.set(key, {"text": result.text, **result.usage.model_dump()})
        return result

    @overload
    async def complete_choices(
        self,
        messages: Messages,
        *,
        variants: Sequence[int],
        output: type[M],
        **options: Unpack[CallOptions],
    ) -> list[Completion[M]]: ...

    @overload
    async def complete_choices(
        self,
        messages: Messages,
        *,
        variants: Sequence[int],
        output: None = None,
        **options: Unpack[CallOptions],
    ) -> list[Completion[None]]: ...

    @overload
    async def complete_choices(
        self,
        messages: Messages,
        *,
        variants: Sequence[int],
        output: type[BaseModel] | dict[str, Any] | None,
        **options: Unpack[CallOptions],
    ) -> list[Completion[Any]]: ...

    async def complete_choices(
        self,
        messages: Messages,
        *,
        variants: Sequence[int],
        model: str = "rules",
        output: type[BaseModel] | dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        stage: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> list[Completion[Any]]:
        """The answers `complete` gets with each of `variants`, asked at once: cached ones
        read back, the rest in one request with `n` where the backend takes it and as
        concurrent calls otherwise (llm/choices.py). One Completion per variant, in order."""
        call = Call(messages, model, output, temperature, max_tokens, seed, stage, params)
        call, model_id, backend, name, spec = self._prepare(call)
        keys = [call.key(model_id, self._api_base(backend), spec, v) for v in variants]
        found = [self._from_cache(k, model_id, spec, call.stage) for k in keys]
        missing = [i for i, hit in enumerate(found) if hit is None]
        if len(missing) > 1 and self._at_once(backend, model_id, name):
            first = variants[missing[0]]
            answers = await self._one_request(
                backend, model_id, name, call, spec, first, len(missing)
            )
            for i, answer in zip(missing, answers, strict=False):
                if answer is None:
                    continue
                found[i] = answer
                if answer.ok and answer.text is not None and self.cache is not None:
                    self.cache.set(keys[i], {"text": answer.text, **answer.usage.model_dump()})
        rest = [i for i, hit in enumerate(found) if hit is None]
        alone = await asyncio.gather(*(self._complete_call(call, variants[i]) for i in rest))
        for i, answer in zip(rest, alone, strict=True):
            found[i] = answer
        return [answer for answer in found if answer is not None]

    def _at_once(self, backend: Backend, model_id: str, name: str) -> bool:
        """Whether the candidates are asked in one request with `n`."""
        if model_id in self._one_choice or self._batch_api(backend, name) is not None:
            return False
        return type(backend).many_choices(name)

    async def _complete_call(self, call: Call, variant: int) -> Completion:
        return await self.complete(
            call.messages,
            model=call.model,
            output=call.output,
            temperature=call.temperature,
            max_tokens=call.max_tokens,
            seed=call.seed,
            variant=variant,
            stage=call.stage,
            params=call.params,
        )

    async def _one_request(
        self,
        backend: Backend,
        model_id: str,
        name: str,
        call: Call,
        spec: structured.OutputSpec | None,
        variant: int,
        n: int,
    ) -> list[Completion | None]:
        """Up to `n` candidates from one request (sent as the call of `variant` would be,
        with `n`). A server that refuses `n` is not asked with it again."""
        profile = self.profile_of(backend, model_id)
        request = call.request(name, spec, self.settings.timeout, variant, n=n, profile=profile)
        mode = self._mode(backend, model_id, request)
        started = time.perf_counter()
        reply, usage, attempts, error = await self._call_negotiating(
            backend, model_id, request, mode
        )
        self._spent(model_id, call.stage, usage, started)
        if reply is None and error and "HTTP 400" in error:  # the server does not take `n`
            self._one_choice.add(model_id)
            return []
        return candidates(reply, usage, attempts, error, model_id, spec, n)

    def _from_cache(
        self, key: str, model_id: str, spec: structured.OutputSpec | None, stage: str | None
    ) -> Completion | None:
        if self.cache is None:
            return None
        started = time.perf_counter()
        stored = self.cache.get(key)
        if stored is None:
            return None
        parsed = None
        if spec is None and not str(stored.get("text") or "").strip():
            return None  # an empty answer cached by an older promptgen: ask again
        if spec is not None:
            parsed, problem = spec.parse(stored["text"])
            if problem:
                return None  # the schema changed shape since; ask again
        original = Usage(**{k: v for k, v in stored.items() if k in Usage.model_fields})
        latency = (time.perf_counter() - started) * 1000
        self.usage.record(model_id, stage, Usage(calls=1, cache_hits=1, latency_ms=latency))
        return Completion(
            text=stored["text"],
            model=model_id,
            parsed=parsed,
            usage=original,
            latency_ms=latency,
            cached=True,
        )

    # -- provider batches (--batch, docs/scale.md) ------------------------------------

    def use_batches(self, ledger: list[BatchJob], save: Callable[[], None]) -> None:
        """With --batch: batch the calls of batched units (`batched(label)`) of one run,
        recording its batches in `ledger` and calling `save` as soon as one is submitted."""
        if self.settings.batch:
            self._batcher = Batcher(self.settings.batch_limits, ledger, save)

    def batch_note(self, model: str) -> str | None:
        """Why `model`'s calls go one by one although --batch is on (None: they don't)."""
        if not self.settings.batch:
            return None
        model_id = self.settings.resolve(model)
        backend, name = self.backend_for(model_id)
        if not (backend.policy.batch and backend.batch_api(name)):
            return f"{model_id}: its provider has no batch API; called one by one"
        return self._batcher.notes.get(model_id) if self._batcher else None

    def _batch_api(self, backend: Backend, name: str) -> BatchAPI | None:
        if self._batcher is None or current_label() is None or not backend.policy.batch:
            return None
        return backend.batch_api(name)

    async def _batched_call(
        self,
        api: BatchAPI,
        backend: Backend,
        model_id: str,
        key: str,
        request: ChatRequest,
        spec: structured.OutputSpec | None,
    ) -> Completion:
        """One line of a provider batch; an answer that does not match the schema gets
        its repair turn as a normal call. A batch refused as a whole: the normal call."""
        assert self._batcher is not None
        mode = self._mode(backend, model_id, request)
        sent = request
        if mode == "json_object" and request.json_schema is not None:
            sent = ChatRequest(**{**request.__dict__, "messages": with_schema(request)})
        label = current_label() or key
        first = await self._batcher.attempt(api, model_id, key, sent, mode, label)
        return await self._structured_call(backend, model_id, request, spec, first)

    async def _structured_call(
        self,
        backend: Backend,
        model_id: str,
        request: ChatRequest,
        spec: structured.OutputSpec | None,
        first: Attempt | None = None,
    ) -> Completion:
        mode = self._mode(backend, model_id, request)
        if first is None:
            first = await self._call_negotiating(backend, model_id, request, mode)
        else:  # a batch's line: a faulty one is asked again as a normal call
            first = await again_if_faulty(self, backend, model_id, request, mode, first)
        reply, usage, attempts, error = first
        if error is not None or reply is None:
            return Completion(
                text=None, model=model_id, usage=usage, attempts=attempts, error=error
            )
        text = reply.text
        if spec is None:
            return text_completion(reply, model_id, usage, attempts)
        parsed, problem = parse(spec, reply)
        if problem is not None:
            assert request.json_schema is not None
            retry = ChatRequest(
                **{
                    **request.__dict__,
                    "messages": structured.repair_messages(
                        request.messages, text, problem, request.json_schema
                    ),
                }
            )
            reply2, usage2, attempts2, error2 = await self._call_negotiating(
                backend, model_id, retry, self._mode(backend, model_id, request)
            )
            usage, attempts = usage + usage2, attempts + attempts2
            if error2 is not None or reply2 is None:
                return Completion(
                    text=text, model=model_id, usage=usage, attempts=attempts, error=error2
                )
            reply, text = reply2, reply2.text
            parsed, problem = parse(spec, reply)
        error = f"{model_id}: answer does not match the schema: {problem}" if problem else None
        return Completion(
            text=text,
            model=model_id,
            parsed=None if problem else parsed,
            usage=usage,
            attempts=attempts,
            error=error,
            finish_reason=reply.finish_reason,
            fault=reply.fault if problem else None,
        )

    def _mode(self, backend: Backend, model_id: str, request: ChatRequest) -> str:
        if request.json_schema is None:
            return "text"
        if backend.policy.structured_mode == "grammar":
            return "grammar"
        if model_id not in self._modes:
            supported = backend.supports_json_schema(model_id)
            self._modes[model_id] = "json_schema" if supported else "json_object"
        mode = self._modes[model_id]
        key = self._schema_modes.key(model_id, request.schema_name, request.json_schema)
        if key is None:  # no schema of this name was refused on this model
            return mode
        refused = self._schema_modes.mode(key)
        if refused is None and not self.settings.strict_output:
            return mode
        self._met(key)  # raises under --strict-output
        return lower(mode, refused) if refused else mode

    async def _call_negotiating(
        self, backend: Backend, model_id: str, request: ChatRequest, mode: str
    ) -> Attempt:
        return await negotiate(self, backend, model_id, request, mode)

    def schema_refused(
        self, model_id: str, request: ChatRequest, refusals: list[tuple[str, str]], mode: str
    ) -> None:
        """A server refused the structured-output modes of `refusals` (mode, its message)
        for the request's schema and answered in `mode`: that schema is asked in `mode` on
        `model_id` from now on, every other schema as before. Under --strict-output the
        refusal is an error instead (SchemaRefusedError)."""
        assert request.json_schema is not None
        strict = self.settings.strict_output
        key, _ = self._schema_modes.refused(
            model_id, request.schema_name, request.json_schema, refusals, None if strict else mode
        )
        self._met(key)

    def _met(self, key: Key) -> None:
        """The refusals of `key` count for this gateway's run (its context records them);
        under --strict-output, the first stops the run."""
        records = self._schema_modes.records(key)
        if key not in self._refusals_met or any(r not in self.schema_refusals for r in records):
            self._refusals_met.add(key)
            self.schema_refusals += [r for r in records if r not in self.schema_refusals]
        if self.settings.strict_output and records:
            raise strict_error(records[0])

    async def aclose(self) -> None:
        """Close HTTP clients inside the loop that opened them, then the cache."""
        if self._root is not self:
            return
        for backend in self._backends.values():
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                await closer()
        self._backends.clear()
        self.close()

    def close(self) -> None:
        if self.cache is not None and self._root is self:
            self.cache.close()
