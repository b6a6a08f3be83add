"""What a test writer is shown: the inputs described (never as template syntax), the case
to fit, the author's guidance, the form of non-prose inputs; and the checks on what it
wrote that only a writer's answer needs (an input that describes itself, an expected
output that echoes the input or talks about the prompt).
"""

from __future__ import annotations

import json
import re
from typing import Any

from promptgen.model import PromptUnderTest
from promptgen.prompting.behaviours import noun_of, plain, prose_input
from promptgen.prompting.input_checks import OPENING_LINES, value_key
from promptgen.prompting.inverse_forms import instruction_of
from promptgen.results import Behaviour, Rule

EXAMPLE_CHARS = 700


# Descriptions promptgen itself gives an input it adds or reads from a peer format: they
# say nothing about the value.
GENERIC = ("The text the prompt works on",)
_ABOUT_INPUT = re.compile(
    r"\b(the user|you are given|you receive|gives you|you get|the input|the message|"
    r"whatever)\b",
    re.I,
)


def bracketed(text: str, names: frozenset[str] = frozenset()) -> str:
    """Placeholders in brackets ("[audience]"), the way writer prompts show a slot: every
    `{{name}}`, and a single-brace `{name}` (LVE's form) of an input in `names`."""
    text = re.sub(r"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}", r"[\1]", text)
    single = re.compile(r"\{([A-Za-z_]\w*)\}")
    return single.sub(lambda m: f"[{m[1]}]" if m[1] in names else m[0], text)


def _said_of_input(prompt: PromptUnderTest, name: str) -> str:
    """The prompt's first sentence about what it is given ("Write one haiku about
    whatever the user gives you: a topic, a word, a feeling or a short scene.")."""
    from promptgen.prompting.seeds import instruction_seeds

    for seed in instruction_seeds(prompt):
        if _ABOUT_INPUT.search(seed.text) or re.search(rf"\b{re.escape(name)}\b", seed.text):
            return bracketed(seed.text, frozenset(prompt.inputs))
    return ""


def _slot(name: str) -> re.Pattern[str]:
    """The placeholder of input `name`: `{{name}}` or LVE's `{name}`."""
    return re.compile(r"\{\{\s*" + re.escape(name) + r"\s*\}\}|\{" + re.escape(name) + r"\}")


def _sent_by_user(prompt: PromptUnderTest, name: str) -> bool:
    """Whether the input's placeholder is in a user message (or in no message at all)."""
    roles = {m.role for m in prompt.messages if _slot(name).search(m.content or "")}
    return not roles or "user" in roles


def _label_before(prompt: PromptUnderTest, name: str) -> str:
    """The label the template puts before an input ("Customer question:" then
    `{{input}}`), when it is a short one."""
    slot = _slot(name)
    for message in prompt.messages:
        match = slot.search(message.content or "")
        if not match:
            continue
        before = message.content[: match.start()].rstrip(" \t").split("\n")
        line = before[-1].strip() or (before[-2].strip() if len(before) > 1 else "")
        if line.endswith(":") and 1 <= len(line.split()) <= 6 and "{" not in line:
            return line.rstrip(":").strip()
    return ""


def described_inputs(prompt: PromptUnderTest, names: list[str], intent: str | None) -> str:
    """One line per input: name, type, enum and description; an input the author did
    not describe is described by the prompt's own sentence about what it is given, else
    by what the prompt does (the intent), so the writer knows what kind of value it is."""
    lines = []
    for name in names:
        spec = prompt.inputs[name]
        description = plain(spec.description or "")
        if description.startswith(GENERIC):
            description = ""
        if not description:
            description = _label_before(prompt, name)
        if not description:
            said = _said_of_input(prompt, name)
            if said:
                # A value the system message holds ("the discount code {code}") is set
                # by whoever runs the prompt, not sent by its user.
                user = _sent_by_user(prompt, name)
                who = "what the user sends" if user else "a value it is run with"
                description = f'{who}; the prompt says: "{said}"'
            elif intent:
                task = intent.strip().rstrip(".")
                description = f"what a user sends to an AI model that {task[0].lower()}{task[1:]}"
        enum = f" (one of {', '.join(map(str, spec.enum))})" if spec.enum else ""
        lines.append(f"- {name} ({spec.type}){enum}" + (f": {description}" if description else ""))
    return "\n".join(lines)


def example_of(prompt: PromptUnderTest, names: list[str]) -> str:
    """The form of the author's values of the inputs that are not prose (code, lists,
    records): a text value's first lines, a structure's first item, so the writer sees
    the form without content to copy (shown a whole sample diff, the 1.5B model wrote
    that diff back 23 times out of 24). Prose is left out (shown a sample review, it
    rewrote that review)."""
    prose = prose_input(prompt)
    shown: dict[str, Any] = {}
    for name in names:
        if name == prose:
            continue
        spec = prompt.inputs[name]
        value = spec.example
        if value is None:
            value = next((s.inputs[name] for s in prompt.test_samples if name in s.inputs), None)
        if value is not None and not (isinstance(value, str) and len(value.split()) <= 3):
            shown[name] = _form(value)
    if not shown:
        return ""
    if len(shown) == 1 and isinstance(next(iter(shown.values())), str):
        return str(next(iter(shown.values())))
    text = json.dumps(shown, ensure_ascii=False, indent=1)
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + " ..."


def given_inputs(prompt: PromptUnderTest, left: list[str], index: int) -> dict[str, Any]:
    """The inputs a test takes from an author's sample rather than from the writer: with
    several inputs to write and one of them the prose a person sends (the question after
    the article, the request beside a code), every other one comes from a sample (the
    `index`-th, in turn), and the writer writes that one alone, shown the others. Asked
    for all three of a help-centre prompt's inputs, the 1.5B wrote a one-line "article"
    ("A book about space exploration") every time; the author's articles are real ones."""
    main = prose_input(prompt)
    if main is None or main not in left or len(left) < 2:
        return {}
    others = [n for n in left if n != main]
    sources = [s.inputs for s in prompt.test_samples if all(n in s.inputs for n in others)]
    if not sources:
        values = {n: prompt.inputs[n].example for n in others}
        sources = [values] if all(v is not None for v in values.values()) else []
    if not sources:
        return {}
    chosen = sources[index % len(sources)]
    return {n: chosen[n] for n in others}


def shared_inputs(prompt: PromptUnderTest) -> dict[str, frozenset[str]]:
    """The author's values `given_inputs` may give a test, by input: set aside when tests
    are compared (two questions about one article are two tests)."""
    main = prose_input(prompt)
    if main is None:
        return {}
    found: dict[str, set[str]] = {}
    for name in prompt.inputs:
        if name == main:
            continue
        values = [s.inputs[name] for s in prompt.test_samples if name in s.inputs]
        values.append(prompt.inputs[name].example)
        found[name] = {value_key(v) for v in values if v is not None}
    return {n: frozenset(v) for n, v in found.items() if v}


def shown_given(given: dict[str, Any]) -> str:
    """The given inputs as the writer sees them: each by name, its value as written."""
    lines = []
    for name, value in given.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{name}:\n{text.strip()}" if "\n" in text else f"{name}: {text}")
    return "\n\n".join(lines)


# Lines of a text sample shown for its form.
FORM_LINES = OPENING_LINES


def _form(value: Any) -> Any:
    """A sample cut to its form: a text's first lines, a list's first item."""
    if isinstance(value, str):
        lines = value.splitlines()
        return "\n".join(lines[:FORM_LINES]) + ("\n..." if len(lines) > FORM_LINES else "")
    if isinstance(value, list):
        return value[:1]
    return value


def guidance_of(prompt: PromptUnderTest, extra: list[str]) -> str:
    """The author's guidance about inputs and tests (frontmatter, then command line)."""
    parts = [prompt.instructions.input_spec, prompt.instructions.tests, *extra]
    return plain(" ".join(p.strip() for p in parts if p and p.strip()))


def noun(names: list[str]) -> str:
    """What the writer is asked for: "review" for one input named review, "" for several."""
    return noun_of(names[0]) if len(names) == 1 else ""


def case_of(rule: Rule, behaviour: Behaviour | None) -> str:
    """The case the inputs must fit, said of the input."""
    if behaviour is not None:
        if behaviour.suffix:
            return "it is an ordinary, realistic one"
        if behaviour.kind == "class" and _NEUTRAL.search(
            f"{behaviour.expected_class} {behaviour.text}"
        ):
            # Asked for "facts without a clear feeling", a small writer still wrote a
            # complaint every time; asked for what happened and what things are, facts.
            return f"{behaviour.text}: {_PLAIN_FACTS}"
        if behaviour.kind == "content":
            # Asked for "a message [that] contains facts, amounts, dates", the 1.5B wrote
            # "I'm here to help" with none (3 of 3); asked for them written out, a name, an
            # order number and an amount (or a placeholder, refused and asked again).
            return f"{behaviour.text}, {_WRITTEN_OUT}"
        return behaviour.text
    said = _unframed(instruction_of(rule.text))
    if rule.inverse:
        # Not "an AI model answering it": the 1.5B wrote that into the input ("I bought
        # this AI model and it was terrible").
        return f"a careless answer to it could easily make this mistake: {said}"
    return f"a good answer to it must take care to follow this rule: {said}"


_NEUTRAL = re.compile(
    r"\bneutral\b|\bneither\b|\b(?:no|without (?:a |any )?)(?:clear |strong )?"
    r"(?:feeling|opinion|sentiment|emotion)s?\b",
    re.I,
)
_PLAIN_FACTS = (
    "it only tells what happened and what things are (sizes, numbers, dates), and says "
    "nothing about whether anyone likes them"
)


_WRITTEN_OUT = (
    "each written out as real ones are (a person's name, an amount, a date, an order "
    "number), never as a placeholder"
)


def _unframed(text: str) -> str:
    text = plain(text).rstrip(".")
    return re.sub(r"^the output\b", "the answer", text, flags=re.I)


def context_of(behaviour: Behaviour | None) -> str:
    """The prompt's sentence a condition or criterion comes from (a class, a temptation
    or a variety case reads on its own; shown the sentence, a small writer drifted)."""
    if behaviour is None or behaviour.kind not in ("condition", "criterion"):
        return ""
    return behaviour.source or ""


_META = re.compile(
    r"\b(?:this|the following) (?:is (?:a |an )?)?(?:sample|test|example|placeholder|fake)\b"
    r"|\b(?:sample|test|example|placeholder) (?:review|text|input|message|prompt|value|document)\b"
    r"|\bthis (?:review|text|input|message|prompt|value|document) (?:is|was|will|should|contains)\b"
    r"|\b(?:written|translated) in (?:english|german|french|spanish|italian|portuguese|dutch)\b"
    # a text about a text: "The text is about how to plan a party", "This is a summary of
    # the provided text.", "The user is writing a detailed summary ..."
    r"|\bthe (?:text|article|document|review|message|input|post|story) (?:is about|describes|"
    r"talks about|discusses|covers|I want)\b"
    r"|\bthis is an? (?:(?:simple|short|brief|long|quick|plain|general|technical) )?"
    r"(?:summary|text|article|document|message)\b"
    r"|\bthe user (?:is|wants|asks|requested|requests|needs)\b"
    # an input that says what it is for: "This is not a product title", "It is also a
    # test to ensure that the title can be longer than the allowed limit."
    r"|\bthis is not an? (?:[\w-]+ )?(?:title|review|question|message|text|input)\b"
    r"|\b(?:is|as) (?:also )?an? test\b|\bcharacter limit\b"
    r"|\b(?:beyond|over|more than|exceeds?|longer than) (?:the )?(?:about )?\d+ characters\b"
    # the writer's own line about the input given back: "- input (string): Customer question"
    r"|^\s*-?\s*[\w-]+ \((?:string|integer|number|boolean|array|object|list)\)"
    # the whole value saying what it is: "This is a short review."
    r"|^\W*this is an? (?:[\w-]+ )?(?:review|text|message|input|question|title|draft|topic|"
    r"sentence|paragraph|example|sample)\W*$"
    r"|\b(?:summari[sz]ation|language|text) model\b"
    # a note to the assistant instead of the content: "Here is the text to summarize:",
    # "Please provide the text that you want summarized", "This is my email signature."
    r"|^\W*here (?:is|are) the (?:text|document|article|message|review|draft|input)s?\b"
    # the case said instead of written: "Here is another review where the author only
    # mentions the size", "A review in which the customer praises the lid."
    r"|^\W*here (?:is|are) (?:an?|another|one more|some) (?:[\w-]+ )?(?:text|document|"
    r"article|message|review|draft|input|question|title|example)s? (?:where|in which|that|"
    r"about|with)\b"
    r"|^\W*(?:an?|another|one more) (?:[\w-]+ )?(?:text|message|review|question|title)s? "
    r"(?:where|in which) the (?:author|writer|customer|user|reviewer|buyer)\b"
    r"|\bplease provide the (?:text|document|article|message|review|draft|input)\b"
    r"|^\W*please (?:provide|give|write) (?:a |an )?(?:response|answer|reply) to the "
    r"(?:following|next)\b"
    r"|\bI (?:want|need|would like) (?:you )?to summari[sz]e\b"
    r"|\b(?:text|article|document|message) to be summari[sz]ed\b"
    r"|^\W*here (?:is|are) (?:an?|another|one more|some) (?:[\w-]+ )?pieces? of text\b"
    r"|\bthe (?:text|document|article|message) (?:that )?you want\b"
    r"|\bI am writing an? (?:summary|review|text|message|document)\b"
    r"|\bthis is (?:my|an?) (?:e-?mail )?signature\b"
    # a text about the person who would write it: "The customer loved the product, but"
    r"|^\W*the (?:customer|user|reviewer|buyer|author|writer|client) (?:loved|liked|hated|"
    r"disliked|was|is|says|said|thinks|thought|felt|feels|found|had|has)\b"
    r"|\bthe ai model\b|\bai assistant\b|\bas an ai\b"
    # the writer refusing instead of writing ("I'm sorry, but I can't assist with that.")
    r"|\bI(?:'m| am) sorry,? but I (?:can't|cannot)\b|\bI (?:can't|cannot) (?:assist|help) with\b",
    re.I,
)


def describes_itself(value: Any, allowed: str = "") -> bool:
    """An input that talks about being an input ("This is a sample review.", "This text
    will be ignored by the AI model.") instead of being one."""
    texts = [value] if isinstance(value, str) else []
    return any(_META.search(t) and not (allowed and allowed.lower() in t.lower()) for t in texts)


def echoes(expected: str, inputs: dict[str, Any]) -> bool:
    """An expected output that repeats an input, or says what the output should be."""
    from rapidfuzz import fuzz

    said = " ".join(expected.split()).lower()
    if re.match(r"^(the|a|an) (output|answer|response|model|ai)\b", said) or re.match(
        r"^(it|this) should\b", said
    ):
        return True
    for value in inputs.values():
        if isinstance(value, str) and len(value) >= 20:
            other = " ".join(value.split()).lower()
            if said in other or fuzz.ratio(said, other) >= 85:
                return True
    return False
