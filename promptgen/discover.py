"""Which files a batch runs: `promptgen DIR_OR_GLOB...` finds its prompts here.

Arguments are files, folders (searched recursively) and globs (`samples/**/*.prompty`,
expanded here, so a quoted glob works). A file named as an argument is run whatever it
holds (an error is that prompt's failure). A file found in a folder or by a glob is run
only when detection says it is a prompt, unless `--include GLOB` names it (it runs) or
`--exclude GLOB` does (it is skipped; --include wins); the others are skipped, each with
its reason:

- a metric (`*.metric.prompty`) or a Verdict-style judge template (`*.verdict.md`):
  metrics of other prompts, not prompts to test;
- a saved run (`context.json`), JSON data, JSON lines, or any file detection refuses;
- README-like documentation (README, CHANGELOG, LICENSE, ... as .md or .txt), and a
  prompt's instruction list (`*.instructions.txt`, read by `bench/quality.py`);
- a plain `.md` or `.txt` that does not read as a prompt: no placeholder and no line
  addressed to a model ("You are...", "Write...", "Summarize...", "Classify...",
  "Reply..."), such as notes, a changelog or setup instructions;
- a file another prompt of the batch reads when it loads: a Promptarchitect system role
  or test sample, an LVE `prompt_file`, a samples file or a `${file:...}` reference;
- a file of a type no format reads (counted, not listed);
- a file listed but gone when read (deleted meanwhile, a dangling link): `GONE`, with a
  note on stderr;
- a symbolic link in a folder that leads out of the folder searched: its target is not
  the folder's to send to a model (as `${file:...}` refuses the same link).

Hidden files and folders, and the batch's own output folder, are never searched; nor is
the filesystem's root (an error: it is no folder of prompts).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from promptgen.api import slug
from promptgen.errors import BadInputError, PromptgenError
from promptgen.formats import SUFFIXES, load_prompt, read_text
from promptgen.formats.body import split_frontmatter
from promptgen.formats.detect import CONTEXT, detect, json_kind
from promptgen.jsonio import recording_reads
from promptgen.model import PromptUnderTest

# Files with these endings are looked at; any other file in a folder is not a prompt.
CANDIDATES = (*SUFFIXES, ".json")
DOCUMENTATION = frozenset({
    "readme", "changelog", "changes", "history", "license", "licence", "copying", "notice",
    "authors", "contributing", "code_of_conduct", "security",
})  # fmt: skip
# A prompt's hand-written list of its explicit instructions, one per line (the rule
# recall benchmark reads it): a .txt that is not a prompt.
INSTRUCTIONS = ".instructions.txt"
_NOT_SEARCHED = frozenset({"__pycache__", "node_modules"})
GONE = "it was gone when read (deleted meanwhile, or a dangling link)"
# What makes a plain .md or .txt read as a prompt: a placeholder outside code, or a line
# (not a heading or a list item) that opens with an instruction to a model.
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{[A-Za-z_][\w.]*\}")
_VERBS = (
    "write|summari[sz]e|classify|reply|respond|translate|rewrite|extract|generate|explain|"
    "describe|answer|rate|grade|score|label|categori[sz]e|identify|determine|evaluate|"
    "assess|judge|compare|paraphrase|simplify|shorten|draft|compose|create|produce|"
    "suggest|recommend|convert|analy[sz]e|proofread|critique|decide|imagine|pretend|given"
)
_ADDRESSED = re.compile(
    r"(?:(?:system|user|assistant)\s*:\s*)?(?:"
    r"you(?:'re|'ll)?\b(?!\s+(?:can|could|may|might)\b)"
    r"|your\s+(?:task|job|role|goal|answer|reply|response)\b"
    r"|act\s+as\b|as\s+an?\s+\w[^.\n]*,\s*you\b"
    rf"|(?:please\s+)?(?:{_VERBS})\b(?!\s*:)(?=\s+\S)"
    r")",
    re.I,
)
_NOT_PROSE = re.compile(r"\s*(?:#|>|[-*+]\s|\d+[.)]\s|\|)")
NOT_A_PROMPT = (
    "not a prompt: no placeholder and no instruction to a model (You are..., Write..., "
    "Summarize...); --include it to run it"
)


def reads_as_prompt(text: str) -> bool:
    """Whether a plain .md or .txt (frontmatter aside) reads as a prompt: a placeholder
    outside code, or a prose line that opens with an instruction to a model."""
    try:
        body = split_frontmatter(text, "", require_close=False).body
    except PromptgenError:
        body = text
    prose = _CODE.sub(" ", body)
    if _PLACEHOLDER.search(prose):
        return True
    return any(
        _ADDRESSED.match(line.strip()) and not _NOT_PROSE.match(line) for line in prose.splitlines()
    )


def _matches(path: Path, patterns: Sequence[str]) -> str | None:
    """The first glob that names `path`: matched against the path as found (`*` also
    crosses folders, `**/` may be empty) or, from the right, against its last parts."""
    shown = path.as_posix()
    for pattern in patterns:
        loose = pattern.replace("**/", "")
        if fnmatch.fnmatch(shown, pattern) or fnmatch.fnmatch(shown, loose):
            return pattern
        try:
            if path.match(pattern) or path.match(loose):
                return pattern
        except ValueError:  # an empty or absolute pattern PurePath.match refuses
            continue
    return None


@dataclass
class Found:
    """A prompt to run: its file, format, output folder name and the prompt (or the error
    that loading it raised, reported as that prompt's failure)."""

    path: Path
    slug: str
    format: str | None = None
    prompt: PromptUnderTest | None = None
    error: PromptgenError | None = None
    reads: set[Path] = field(default_factory=set)


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


@dataclass
class Plan:
    prompts: list[Found]
    skipped: list[Skipped]
    others: int = 0  # files in the folders of a type no format reads

    @property
    def gone(self) -> list[Skipped]:
        """The files skipped because they were gone when read."""
        return [s for s in self.skipped if s.reason == GONE]


def is_batch(args: Sequence[str]) -> bool:
    """More than one argument, a folder or a glob: a batch. One file: a single run."""
    if len(args) != 1:
        return len(args) > 1
    arg = args[0]
    return Path(arg).is_dir() or (glob.has_magic(arg) and not Path(arg).exists())


def find_prompts(
    args: Sequence[str],
    out: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Plan:
    """The prompts of `args` and the files skipped, in argument order (each folder and
    glob sorted). A found file an `include` glob names runs, one an `exclude` glob names
    is skipped (include wins). An argument that matches nothing is an error (exit 2)."""
    given: list[Path] = []
    searched: list[Path] = []
    outside: list[Skipped] = []
    for arg in args:
        if not arg.strip() or "\x00" in arg:
            raise BadInputError(f"{arg!r} is not a path", hint="give prompt files or folders")
        path = Path(arg)
        if path.is_file() or (path.exists() and not path.is_dir()):
            given.append(path)
        elif path.is_dir():
            _not_the_root(path)
            searched += _walk(path, out, outside)
        elif glob.has_magic(arg):
            matched = sorted(Path(p) for p in glob.glob(arg, recursive=True))
            if not matched:
                raise BadInputError(f"{arg}: no file matches", hint="check the pattern")
            for match in matched:
                if match.is_dir():
                    _not_the_root(match)
                searched += _walk(match, out, outside) if match.is_dir() else [match]
        else:
            raise BadInputError(f"{arg}: no such file or folder", hint="check the path")
    plan = _classify(given, searched, include, exclude)
    plan.skipped[:0] = outside
    return plan


def _not_the_root(folder: Path) -> None:
    """The filesystem's root holds no prompts of its own: searching it would read every
    file of the machine (and /proc), so it is refused."""
    resolved = _resolved(folder)
    if resolved is not None and resolved == Path(resolved.anchor):
        raise BadInputError(
            f"{folder}: the filesystem's root is not a folder of prompts",
            hint="give the folder that holds your prompts",
        )


def _resolved(path: Path) -> Path | None:
    """The path with its links followed, or None where that cannot be read."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # no permission, a link loop
        return None


def _walk(folder: Path, out: Path, outside: list[Skipped]) -> list[Path]:
    """Every file under `folder`, sorted; hidden entries and `out` left out. A symbolic
    link that leads out of `folder` is not followed: it goes to `outside`, with why."""
    skip = out.resolve()
    top = _resolved(folder) or folder
    files: list[Path] = []
    for root, dirs, names in os.walk(folder):
        here = Path(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".") and d not in _NOT_SEARCHED and _resolved(here / d) != skip
        )
        for d in dirs:  # os.walk lists a linked folder but does not enter it
            _leads_out(here / d, top, folder, outside)
        for name in sorted(names):
            path = here / name
            if name.startswith("."):
                continue
            if not _leads_out(path, top, folder, outside):
                files.append(path)
    return files


def _leads_out(path: Path, top: Path, folder: Path, outside: list[Skipped]) -> bool:
    """Whether `path` is a symbolic link leading out of `folder` (resolved: `top`); such a
    link is recorded as skipped, its target never read."""
    if not path.is_symlink():
        return False
    target = _resolved(path)
    if target is not None and target.is_relative_to(top):
        return False
    shown = target if target is not None else path
    reason = f"a symbolic link to {shown}, outside {folder}: not followed"
    outside.append(Skipped(path, reason))
    return True


def _classify(
    given: list[Path], searched: list[Path], include: Sequence[str], exclude: Sequence[str]
) -> Plan:
    plan = Plan([], [])
    seen: set[Path] = set()
    forced: set[Path] = set()
    for path, named in [*((p, True) for p in given), *((p, False) for p in searched)]:
        key = _resolved(path) or path.absolute()
        if key in seen:
            continue
        seen.add(key)
        if named or _matches(path, include):
            forced.add(key)
            plan.prompts.append(_load(path, None))
            continue
        excluded = _matches(path, exclude)
        if excluded is not None:
            plan.skipped.append(Skipped(path, f"excluded by --exclude {excluded}"))
            continue
        if not path.name.lower().endswith(CANDIDATES):
            plan.others += 1
            continue
        verdict = _look(path)
        failed = isinstance(verdict, str) or verdict.error is not None
        if failed and not path.exists():  # listed by the walk, deleted since
            verdict = GONE
        if isinstance(verdict, str):
            plan.skipped.append(Skipped(path, verdict))
        else:
            plan.prompts.append(verdict)
    _drop_used(plan, forced)
    _unique_slugs(plan.prompts)
    return plan


def _look(path: Path) -> Found | str:
    """A found file as a prompt to run, or the reason it is skipped."""
    name = path.name.lower()
    if name.endswith(".metric.prompty"):
        return "a metric (*.metric.prompty): the prompts in its folder use it"
    if name.endswith(INSTRUCTIONS):
        return "an instruction list (*.instructions.txt): bench/quality.py reads it"
    stem = name.split(".")[0]
    if stem in DOCUMENTATION and name.endswith((".md", ".txt")):
        return "documentation (README-like), not a prompt"
    try:
        text = read_text(path)
        fmt = detect(path, text)
    except PromptgenError as err:
        if name.endswith((".md", ".txt", ".json", ".prompt")):
            return f"not a prompt: {err.message}"
        return _load(path, None)  # a .prompty that cannot be read: a broken prompt
    if fmt == CONTEXT:
        return "a saved run (context.json): pass it alone to resume it"
    if fmt == "verdict":
        return "a Verdict-style judge template (a metric: use it with --metric)"
    if fmt in ("markdown", "text") and not reads_as_prompt(text):
        return NOT_A_PROMPT
    return _load(path, fmt)


def _load(path: Path, fmt: str | None) -> Found:
    try:
        with recording_reads() as reads:
            if fmt is None and path.suffix.lower() == ".json" and json_kind(path) == CONTEXT:
                return Found(path, slug(path.parent.name), fmt)  # a saved run, resumed
            prompt = load_prompt(path, fmt)
    except PromptgenError as err:
        return Found(path, slug(path.name.split(".")[0]), fmt, error=err)
    reads.discard(path.resolve())
    return Found(path, slug(prompt.name), prompt.format, prompt, reads=reads)


def _drop_used(plan: Plan, named: set[Path]) -> None:
    """Skip the found files another prompt of the batch reads (its parts, not prompts)."""
    users: dict[Path, Path] = {}
    for item in plan.prompts:
        for read in item.reads:
            users.setdefault(read, item.path)
    kept = []
    for item in plan.prompts:
        key = item.path.resolve()
        user = users.get(key)
        if user is not None and key not in named:
            plan.skipped.append(Skipped(item.path, f"read by {user} (part of that prompt)"))
        else:
            kept.append(item)
    plan.prompts = kept


def _unique_slugs(items: Iterable[Found]) -> None:
    """Two prompts of one name get folders `name`, `name-2`, ... in the batch's order."""
    taken: set[str] = set()
    for item in items:
        base, n = item.slug, 1
        while item.slug in taken:
            n += 1
            item.slug = f"{base}-{n}"
        taken.add(item.slug)
