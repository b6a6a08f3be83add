"""The prompt's own instruction sentences: candidate rules found without a model.

A small model asked to "find the requirements" of a whole prompt misses some, invents
others and says one twice. Cut into pieces it does well: the instructions are found here
by their form (an imperative, a prohibition, a condition followed by an imperative, a
"must"), and the model only rewrites each one as a rule about the output
(`stages/rules.py`, stepwise mode). Each rule then comes from a sentence of the prompt.

The text is the template as its author wrote it: template tags are dropped, placeholders
are kept, role markers and headings are skipped. A bullet list is read item by item; a
lead-in that ends with a colon is a seed of its own when it is an instruction and is
shown beside its items (`Seed.context`) so a rewrite knows what an item is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from promptgen.model import PromptUnderTest


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Verbs an instruction starts with (base form). A sentence starting with another word is
# an instruction only when a cue below says so.
IMPERATIVES = word_set("""
add address answer apologise apologize ask avoid begin call check choose classify close
copy count create decide decline describe detect do don't drop end ensure explain extract
fill finish follow format give group include judge keep label leave limit list make
mark mention name note offer omit output pick place point prefer present produce put
quote rate read refuse remove repeat reply report respond restate return review rewrite
say select send separate share show sign sort speak spell start state stay stick stop
summarise summarize tell translate treat turn use wrap write
""")
# Words that may come before the verb ("Always answer", "Please reply", "Then write").
LEADERS = word_set("always never only please then also and but so just first finally")
# A sentence with one of these is an instruction whatever its first word.
CUES = re.compile(r"\b(must|should|shall|never|always|do not|don't|is not allowed|only)\b", re.I)
# "If ..., write ...": a condition, then an instruction after its comma.
CONDITIONS = word_set("if when unless where whenever once before after for in")

_TAG = re.compile(r"\{%-?.*?-?%\}|\{#.*?#\}|\{\{[#^/!][^}]*\}\}", re.S)
_ROLE = re.compile(r"^\s*(system|user|assistant|developer)\s*:\s*$", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,2}[.)])\s+")
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{[a-z_][a-z0-9_]*\}", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z{])")


_LABELLED = re.compile(r"^[\w'\" -]{1,30}:\s")


def _option(item: str) -> bool:
    """A list item that is one of the choices its lead-in offers: a few words, or a
    label with its meaning ("positive: the customer is mostly pleased")."""
    return len(item) <= 100 and (len(item) <= 40 or bool(_LABELLED.match(item)))


@dataclass(frozen=True)
class Seed:
    text: str  # the instruction as written
    block: int  # which list or paragraph it came from (adjacent seeds of one block merge)
    context: str = ""  # a list's lead-in, for an item of that list
    # An item of a list whose lead-in is not an instruction, not an instruction itself
    # ("Things that count against a title:" then "- it is too vague"): a criterion the
    # output applies to the input, kept as written (a rewrite turned it into a rule
    # about the output's own wording).
    criterion: bool = False
    # The choices of an instruction's list, as written ("positive: the customer is
    # mostly pleased"): the output classes the prompt names (prompting/behaviours.py).
    options: tuple[str, ...] = ()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


# Words that carry no requirement of their own (a rule's "The output ..." frame).
_FRAME = word_set("""
the a an and or of to in on for with by as at is are be it its this that these those
output outputs answer answers response contains contain includes include must should
does not no any every each all only one when if than then which what who from into
""")


def content_words(text: str) -> set[str]:
    """A text's content words, compared by their first five letters ("explain" and
    "explanation" are one word)."""
    return {w[:5] for w in _words(text) if w not in _FRAME}


def is_instruction(sentence: str) -> bool:
    words = _words(sentence)
    while words and words[0] in LEADERS:
        if words[0] in ("never", "always", "only"):
            return True
        words = words[1:]
    if not words:
        return False
    if words[0] in IMPERATIVES:
        return True
    if words[0] in CONDITIONS:
        if "," in sentence:
            after = _words(sentence.split(",", 1)[1])
            if after and (after[0] in IMPERATIVES or after[0] in LEADERS):
                return True  # "If the message is empty, write ..."
        if any(w in IMPERATIVES for w in words[2:6]):
            return True  # "For every contact report these fields"
    return bool(CUES.search(sentence))


def _condition(tag: str) -> str | None:
    """The condition a template tag opens ("" when it closes one; None: not a condition)."""
    inner = tag.strip("{}%-# \n").strip()
    if tag.startswith("{{#"):
        return f"When {tag[3:-2].strip()} is set:"
    if tag.startswith("{{^"):
        return f"When {tag[3:-2].strip()} is not set:"
    if tag.startswith("{{/"):
        return ""
    word, _, rest = inner.partition(" ")
    if word in ("if", "elif"):
        return f"When {rest.strip()}:"
    if word == "else":
        return "Otherwise:"
    if word == "endif":
        return ""
    return None


def _lines(text: str) -> list[tuple[str, str]]:
    """The text's lines without template tags, each with the condition it is under."""
    out: list[tuple[str, str]] = []
    condition = ""
    line = ""
    pos = 0
    previous = ""  # the condition an {% else %} turns around
    for match in _TAG.finditer(text):
        line += text[pos : match.start()]
        pos = match.end()
        opened = _condition(match.group(0))
        if opened == "Otherwise:" and previous.startswith("When "):
            opened = f"When not {previous[len('When ') :]}"  # 'When not x == "csv":'
        elif opened:
            previous = opened
        if opened is not None:
            *done, line = line.split("\n")
            out.extend((d, condition) for d in done)
            condition = opened
    *done, last = (line + text[pos:]).split("\n")
    out.extend((d, condition) for d in [*done, last])
    return out


def _blocks(text: str) -> list[list[tuple[str, str]]]:
    """Paragraphs and lists, each a list of (item, condition): a paragraph is one item,
    each bullet with its continuation lines is one. A list right after a paragraph that
    ends with a colon belongs to that paragraph's block, blank line or not."""
    blocks: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for raw, condition in _lines(text):
        line = raw.strip()
        if not line or _ROLE.match(line) or line.startswith("#"):
            if current and not current[-1][0].endswith(":"):
                blocks.append(current)
                current = []
            continue
        bullet = _BULLET.match(raw)
        if bullet:
            current.append(("- " + raw[bullet.end() :].strip(), condition))
        elif current and current[-1][0].startswith("- ") and raw[:1].isspace():
            current[-1] = (current[-1][0] + " " + line, current[-1][1])  # a bullet goes on
        elif current and not current[-1][0].startswith("- "):
            current[-1] = (current[-1][0] + " " + line, current[-1][1])  # the paragraph goes on
        else:
            current.append((line, condition))
    if current:
        blocks.append(current)
    return blocks


def _sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _says_something(text: str) -> bool:
    """More than placeholders: `{{review}}` alone is the input, not an instruction."""
    return len(_words(_PLACEHOLDER.sub(" ", text))) >= 2


def seeds_of_text(text: str) -> list[Seed]:
    found: list[Seed] = []
    for number, block in enumerate(_blocks(text)):
        lead = ""
        owner: int | None = None  # the seed of an instruction that leads the list
        for item, condition in block:
            if item.startswith("- "):
                body = item[2:].strip()
                if not _says_something(body) or not (lead or is_instruction(body)):
                    continue
                if owner is not None and not is_instruction(body) and _option(body):
                    # The options of an instruction ("Answer with one of these words:"
                    # then "- positive: ...") are part of it, not rules of their own.
                    head = found[owner]
                    joiner = " " if head.text.endswith(":") else "; "
                    found[owner] = Seed(
                        head.text + joiner + body,
                        head.block,
                        head.context,
                        head.criterion,
                        (*head.options, body),
                    )
                    continue
                context = lead if len(_words(lead)) > 2 else ""  # not a bare "Rules:"
                criterion = bool(context) and owner is None and not is_instruction(body)
                found.append(Seed(body, number, _join(condition, context), criterion))
                continue
            lead, owner = "", None
            for sentence in _sentences(item):
                instruction = _says_something(sentence) and is_instruction(sentence)
                if instruction:
                    found.append(Seed(sentence, number, condition))
                if sentence.endswith(":"):
                    lead = sentence  # "Things that count against a title:" leads a list
                    owner = len(found) - 1 if instruction else None
    return found


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def instruction_seeds(prompt: PromptUnderTest) -> list[Seed]:
    """The instruction sentences of the prompt's messages, in order, each once."""
    messages = prompt.variants[0].messages if prompt.variants else prompt.messages
    seen: set[str] = set()
    seeds: list[Seed] = []
    offset = 0
    for message in messages:
        if message.to_fill or not message.content:
            continue
        found = seeds_of_text(message.content)
        for seed in found:
            key = " ".join(_words(seed.text))
            if key and key not in seen:
                seen.add(key)
                seeds.append(
                    Seed(seed.text, seed.block + offset, seed.context, seed.criterion, seed.options)
                )
        offset += 1 + max((s.block for s in found), default=0)
    return seeds


def group(seeds: list[Seed], limit: int) -> list[list[Seed]]:
    """At most `limit` groups (0: no limit): while there are too many, the two adjacent
    groups that are shortest together become one, so no instruction is lost to the
    cap; items of one list merge first, then seeds of one block, then any."""
    groups = [[s] for s in seeds]
    while limit and len(groups) > limit:
        pairs = [
            (
                groups[i][0].block != groups[i + 1][0].block,
                _list(groups[i][-1]) != _list(groups[i + 1][0]),
                _length(groups[i] + groups[i + 1]),
                i,
            )
            for i in range(len(groups) - 1)
        ]
        *_, i = min(pairs)
        groups[i : i + 2] = [groups[i] + groups[i + 1]]
    return groups


def _list(seed: Seed) -> str:
    """The list a seed belongs to (its lead-in; a lead-in leads its own), or ""."""
    return seed.context or (seed.text if seed.text.endswith(":") else "")


def _length(group: list[Seed]) -> int:
    return sum(len(s.text) for s in group)


def group_text(group: list[Seed]) -> tuple[str, str]:
    """A group as one instruction to rewrite, and the lead-in of its list ("" if none)."""
    body = " ".join(s.text if s.text.endswith((".", ":", "!", "?")) else s.text + ";"
                    for s in group).rstrip(";")  # fmt: skip
    return body, group[0].context
