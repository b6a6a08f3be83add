"""The scripted model bench/edits.py runs against: rules read instruction by instruction.

It extends the large-model stand-in of bench/quality_fake.py (every rule grounded when
its words are the prompt's, every test input valid) with how it reads rules, so that an
edit of one instruction changes one rule, as with a capable model:

- `RulesAnswer` (the whole prompt at once): one rule per instruction sentence of the
  prompt, as promptgen's own reading of a prompt finds them (`prompting/seeds.py`),
  said as "The output follows the instruction: ...", at most the number asked for;
- `RuleFromInstruction` (one instruction, stepwise or after an edit): the same sentence
  said the same way, so an instruction read alone or in the whole prompt gives one rule.

Answers depend on the request's content only (`by_content`), never on the order calls
arrive in, so runs made side by side on one server get the answers they would alone.
Run it in its own process with `python -m bench.edits_fake --latency 0.3`: it prints its
URL and serves until its stdin closes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.quality_fake import LargeModelResponder
from promptgen.prompting.seeds import seeds_of_text

RULE = "The output follows the instruction: {}"
_ASKED = re.compile(r"Give at most (\d+)")  # the rules stage's cap (prompts/output_rules)
_PROMPT = re.compile(r"<PROMPT>\n?(.*?)\n?</PROMPT>", re.S)
_INSTRUCTION = re.compile(r"Instruction:\n(.*?)\n\nRewrite this instruction", re.S)


def rule_of(instruction: str) -> str:
    return RULE.format(" ".join(instruction.split()))[:290]


class EditingModel(LargeModelResponder):
    def __init__(self) -> None:
        super().__init__()
        self.by_content = True
        self.honour_n = True

    def answer(self, name: str, schema: dict[str, Any], text: str, n: int) -> Any:
        if name == "RulesAnswer":
            found = _PROMPT.findall(text)
            prompt = max(found, key=len) if found else text
            cap = _ASKED.search(text)
            seeds = seeds_of_text(prompt)[: int(cap.group(1)) if cap else None]
            return {"rules": [rule_of(s.text) for s in seeds]}
        if name == "RuleFromInstruction":
            quoted = _INSTRUCTION.search(text)
            return {"rule": rule_of(quoted.group(1) if quoted else text)}
        return super().answer(name, schema, text, n)


@contextmanager
def serving(latency: float) -> Iterator[str]:
    """The fake in its own process (it does not share the client's GIL); yields its URL."""
    from bench.gateway import server_process

    with server_process("bench.edits_fake", "--latency", str(latency)) as (url, _):
        yield url


def main() -> None:
    import argparse

    from tests.fakellm_aio import AsyncFakeLLM

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    with AsyncFakeLLM(latency=args.latency, responder=EditingModel()) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
