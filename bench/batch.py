"""Provider-batch benchmark (`--batch`): PROMPTS prompts x TESTS tests x MODELS models.

Every cell is a model-under-test call and a compliance verdict from the judge, made
through the gateway exactly as the runs stage makes them (`batched(cell key)`), against
the fake Batch API on 127.0.0.1 (tests/fake_batches.py; no network). Prints requests
per batch, batches, time to write the JSONL and to join the answers back, the ledger's
size as saved in context.json, and peak memory.

    python bench/batch.py [--prompts 10] [--tests 1000] [--models 5] [--max-requests 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from promptgen.llm import LLM, batched, load_settings
from promptgen.llm.batch import BatchLimits, read_line, request_line, split
from promptgen.llm.types import ChatRequest
from promptgen.results import BatchJob
from tests.fake_batches import FakeBatches
from tests.fakellm import Reply

SYSTEM = "You classify the sentiment of a product review as positive, negative or neutral. " * 6
VERDICT = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["ok", "reason"],
    "additionalProperties": False,
}


def responder(body: dict[str, object]) -> Reply:
    if body.get("response_format"):
        return Reply(
            json.dumps({"ok": True, "reason": "follows the rules"}), 400, completion_tokens=12
        )
    return Reply("positive", prompt_tokens=180, completion_tokens=2)


async def one_prompt(llm: LLM, prompt: int, tests: int, models: list[str]) -> None:
    async def cell(test: int, model: str) -> None:
        with batched(f"p{prompt}-t{test:05d}|{model}|0"):
            user = f"Review #{test} of prompt {prompt}: the blender is loud but works well."
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
            run = await llm.complete(messages, model=model)
            question = f"Input: {user}\nOutput of {model}: {run.text}\nDoes it follow the rules?"
            judge = [{"role": "user", "content": question}]
            await llm.complete(judge, model="eval", output=VERDICT)

    await asyncio.gather(*(cell(t, m) for t in range(tests) for m in models))
    await llm.aclose()


def wire_figures(lines: int) -> tuple[float, float, int]:
    """Seconds to write `lines` JSONL lines and to read as many answers back, and bytes."""
    request = ChatRequest(model="openai/m1", messages=[{"role": "system", "content": SYSTEM}])
    started = time.perf_counter()
    written = [(f"c{i}", request_line(f"c{i}", request, "text")) for i in range(lines)]
    split(written, BatchLimits())
    write_s = time.perf_counter() - started
    answer = {
        "custom_id": "c0",
        "response": {
            "status_code": 200,
            "body": {
                "choices": [{"message": {"content": "positive"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 180, "completion_tokens": 2},
            },
        },
    }
    raw = [json.dumps({**answer, "custom_id": f"c{i}"}) for i in range(lines)]
    started = time.perf_counter()
    joined = dict(read_line(json.loads(x)) for x in raw)
    join_s = time.perf_counter() - started
    assert len(joined) == lines
    return write_s, join_s, sum(len(x[1]) for x in written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--max-requests", type=int, default=50_000)
    args = parser.parse_args()
    models = [f"openai/m{i + 1}" for i in range(args.models)]
    limits = BatchLimits(poll=0.05, max_poll=0.2, gather=0.2, max_requests=args.max_requests)
    with FakeBatches(responder=responder, polls=1) as fake, tempfile.TemporaryDirectory() as tmp:
        cli = {"api_base": fake.url, "eval": "openai/judge", "cache_dir": tmp, "batch": True}
        settings = load_settings(cli, env={}, cwd=Path(tmp))
        settings.batch_limits = limits
        ledger_bytes = 0
        started = time.perf_counter()
        for prompt in range(args.prompts):
            llm = LLM(settings)
            ledger: list[BatchJob] = []
            llm.use_batches(ledger, lambda: None)
            asyncio.run(one_prompt(llm, prompt, args.tests, models))
            ledger_bytes += len(json.dumps([j.model_dump(mode="json") for j in ledger]))
        wall = time.perf_counter() - started
    sizes = [len(b.custom_ids) for b in fake.batches.values()]
    cells = args.prompts * args.tests * args.models
    write_s, join_s, jsonl = wire_figures(args.tests * args.models)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"scale: {args.prompts} prompts x {args.tests} tests x {args.models} models = {cells} cells"
    )
    print(f"batched requests: {sum(sizes)} (runs + verdicts) in {len(sizes)} batches")
    print(
        f"requests per batch: min {min(sizes)}, max {max(sizes)}, "
        f"mean {sum(sizes) / len(sizes):.0f}"
    )
    print(
        f"polls: {len(fake.retrieved)}; wall time {wall:.1f}s ({wall / cells * 1000:.2f} ms a cell)"
    )
    print(
        f"per prompt ({args.tests * args.models} run lines): JSONL {jsonl / 1e6:.2f} MB, "
        f"written in {write_s * 1000:.0f} ms, answers joined in {join_s * 1000:.0f} ms"
    )
    print(f"ledger in context.json: {ledger_bytes / args.prompts / 1024:.0f} KiB a prompt")
    print(f"peak memory (max RSS, with the fake server's files): {peak_mb:.0f} MiB")


if __name__ == "__main__":
    main()
