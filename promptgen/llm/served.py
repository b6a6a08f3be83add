"""The models an OpenAI-compatible server serves: `GET {api_base}/models`.

With `--api-base` and no model named for a role, promptgen asks the server which models
it serves (OpenAI's shape, `{"data": [{"id": ...}]}`, which vLLM, llama.cpp's server,
LM Studio and Ollama's `/v1` answer too), once and with a short timeout, before the
first model call. The answer is one of three: a list of ids; no list (HTTP 404, an
answer that is not such a list: the caller keeps the model id `default` and says so);
or no answer at all (a refused connection: the calls that follow report it as before).

The key goes in the Authorization header as for chat calls; redirects are not followed,
so the header never reaches another host.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from urllib.parse import urlsplit, urlunsplit

from promptgen.errors import BadInputError
from promptgen.llm.config import API_BASE_DEFAULT, GatewaySettings
from promptgen.words import counted

LOOKUP_TIMEOUT = 5.0  # seconds: a list is one small answer
MAX_LISTED = 10  # ids an error line lists; the rest are counted
MAX_BODY = 4 * 2**20  # a longer answer is not read as a list
MAX_ID = 256  # longer ids (or ids with spaces, control characters) are not model names
SERVED = "the one model "  # the source of a model taken from the list: served_source()
ROLES = ("rules", "eval", "baseline", "groundtruth")  # the aliases a run calls


@dataclass(frozen=True)
class Served:
    """What `GET /models` gave: `ids` (sorted), or why there is no list (`problem`), or
    that the server could not be reached at all (`unreachable`)."""

    api_base: str
    ids: tuple[str, ...] = ()
    problem: str | None = None
    unreachable: bool = False


# Answers already had, per (API base, key), in a scope that asks once for many runs
# (a batch: every prompt's run and the gateway they share). Outside one, each call asks.
_MEMO: ContextVar[dict[tuple[str, str], Served] | None] = ContextVar("served", default=None)


@contextlib.contextmanager
def asked_once() -> Iterator[None]:
    """Within this block the server is asked at most once per API base."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def served_models(api_base: str, timeout: float = LOOKUP_TIMEOUT) -> Served:
    """The models `api_base` serves (see the module's docstring)."""
    key = os.environ.get("OPENAI_API_KEY") or "no-key"  # as OpenAICompatBackend sends it
    memo = _MEMO.get()
    if memo is not None and (api_base, key) in memo:
        return memo[api_base, key]
    served = _ask(api_base, key, min(timeout, LOOKUP_TIMEOUT))
    if memo is not None:
        memo[api_base, key] = served
    return served


def served_source(api_base: str) -> str:
    """Where a model taken from the server's list came from, as sources are written."""
    return f"{SERVED}{api_base} serves"


def unnamed(settings: GatewaySettings) -> list[str]:
    """The roles with no model named anywhere: each falls back to `openai/default`."""
    if not settings.api_base:
        return []
    return [role for role in ROLES if settings.sources.get(role) == API_BASE_DEFAULT]


def ask_for(settings: GatewaySettings) -> Served | None:
    """The server's list when a role has no model named (None: every role has one)."""
    if not settings.api_base or not unnamed(settings):
        return None
    return served_models(settings.api_base, settings.timeout)


def filled(settings: GatewaySettings, served: Served | None) -> GatewaySettings:
    """`settings` with every unnamed role on the one model `served` lists (the id as
    served, behind `openai/`, which the backend drops once); else unchanged."""
    if served is None or len(served.ids) != 1:
        return settings
    empty = unnamed(settings)
    model, source = f"openai/{served.ids[0]}", served_source(served.api_base)
    return replace(
        settings,
        models={**settings.models, **dict.fromkeys(empty, model)},
        sources={**settings.sources, **dict.fromkeys(empty, source)},
    )


MAIN_FIRST = "--models (the model under test, which the roles left unnamed use too), or with "


def said(served: Served, flags: list[str], *, main: bool = False) -> str | None:
    """The line saying which model the roles of `flags` get, or None when the server
    cannot be reached (the calls say so); several models are an error. On the main
    command (`main`) its hint offers --models first: the roles left unnamed then use the
    model under test named there (roles.from_server)."""
    choose = ", ".join(flags[:-1]) + " and " + flags[-1] if len(flags) > 1 else "".join(flags)
    if served.unreachable:
        return None
    if served.problem is not None:
        return (
            f"{served.api_base} lists no models ({served.problem}); sending the model id "
            f'"default" ({choose} to name one)'
        )
    if len(served.ids) > 1:
        raise BadInputError(
            f"{served.api_base} serves {counted(len(served.ids), 'model')}: {listing(served.ids)}",
            hint=f"name the one to use with {MAIN_FIRST if main else ''}{choose}, or "
            "PROMPTGEN_MODEL for every role",
        )
    model = served.ids[0]
    return f"using {model}, the one model {served.api_base} serves ({choose} to choose another)"


def listing(ids: tuple[str, ...]) -> str:
    """`a, b, c`, cut after MAX_LISTED ids (`... and 4 more`)."""
    shown = ", ".join(ids[:MAX_LISTED])
    rest = len(ids) - MAX_LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


def models_url(api_base: str) -> str:
    """`{api_base}/models`, as the chat calls' `{api_base}/chat/completions` (no query)."""
    parts = urlsplit(api_base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/models", "", ""))


def _ask(api_base: str, key: str, timeout: float) -> Served:
    import http.client  # loaded here: a run without --api-base never needs them
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None  # a 3xx stays an answer without a list

    request = urllib.request.Request(
        models_url(api_base),
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "User-Agent": "promptgen",
        },
    )
    opener = urllib.request.build_opener(NoRedirect)  # the environment's proxies, as calls
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_BODY + 1)
    except urllib.error.HTTPError as err:
        return Served(api_base, problem=f"HTTP {err.code}")
    except TimeoutError:
        return Served(api_base, problem=f"no answer within {timeout:g} s")
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):
            return Served(api_base, problem=f"no answer within {timeout:g} s")
        return Served(api_base, unreachable=True)
    except (http.client.HTTPException, OSError, ValueError):
        return Served(api_base, unreachable=True)  # the calls will say what is wrong
    return _parsed(api_base, body)


def _parsed(api_base: str, body: bytes) -> Served:
    if len(body) > MAX_BODY:
        return Served(api_base, problem="its answer is too long")
    try:
        data = json.loads(body)
    except ValueError:
        return Served(api_base, problem="its answer is not JSON")
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return Served(api_base, problem="its answer holds no model list")
    ids = {
        item["id"]
        for item in items
        if isinstance(item, dict) and isinstance(item.get("id"), str) and _model_id(item["id"])
    }
    if not ids:
        return Served(api_base, problem="its list is empty")
    return Served(api_base, ids=tuple(sorted(ids)))


def _model_id(text: str) -> bool:
    return 0 < len(text) <= MAX_ID and text.isprintable() and not any(c.isspace() for c in text)
