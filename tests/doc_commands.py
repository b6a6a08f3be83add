"""Every command written in README.md and docs/, as a new user would type it.

`commands()` reads them from the fenced shell blocks (```bash, ```sh, and the `$ ` lines
of ```console blocks); tests/test_doc_commands.py checks that each `promptgen` line parses
against the command line as it is. Run as a script, it runs every one of them for real:

    python -m tests.doc_commands --out /tmp/doc-run      # one line per command, a summary

in a scratch folder holding the files the docs name (`my.prompty`, `prompts/`, an LVE
repository, ...), against the independent mock server (../shared/tools/mockllm.py) through
PROMPTGEN_API_BASE, so no call leaves 127.0.0.1. Placeholders the docs use for "your
model" (`m`, `m1`, `g`, ...) are model names the mock answers. A few commands name tools
this machine stands in for (`npx promptfoo@...` is the pinned promptfoo of tests/tools,
`pbpaste` is `cat`); they are listed in SUBSTITUTE. A command whose documented outcome is
not exit 0 (a CI gate that fails, a provider that needs the internet) is in EXPECT with
its reason; pip installs (network) are in SKIP.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
SHELL_BLOCK = re.compile(r"^```(bash|sh|shell|console)[ \t]*\n(.*?)^```", re.S | re.M)
COMMAND_WORDS = ("promptgen", "python", "python3", "pytest", "npx", "inspect", "pip", "cd", "gh")


@dataclass(frozen=True)
class Command:
    doc: str  # README.md, docs/runs.md
    line: int
    text: str  # as written, comment included
    block: int = 0  # the line of its code block (a `cd` holds until the block ends)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def words(self) -> list[str]:
        """The command's words, environment assignments and the comment left out."""
        words = shlex.split(self.text, comments=True)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words.pop(0)
        return words


def commands(docs: tuple[Path, ...] = DOCS) -> list[Command]:
    """Every command line of the docs' shell blocks, in the order they are written;
    a line ending in `\\` is joined with the next."""
    found: list[Command] = []
    for path in docs:
        text = path.read_text(encoding="utf-8")
        for block in SHELL_BLOCK.finditer(text):
            first = text.count("\n", 0, block.start(2)) + 1
            lines = block.group(2).splitlines()
            i = 0
            while i < len(lines):
                start, line = i, lines[i]
                while line.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line.rstrip()[:-1].rstrip() + " " + lines[i].strip()
                i += 1
                if block.group(1) == "console":
                    if not line.startswith("$ "):
                        continue
                    line = line[2:]
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                words = Command(path.name, 0, line).words()
                if words and (words[0] in COMMAND_WORDS or words[0].endswith("pbpaste")):
                    doc = path.relative_to(REPO).as_posix()
                    found.append(Command(doc, first + start, line, first))
    return found


# What this machine stands in for, by the command's first words.
SUBSTITUTE = {
    "npx promptfoo@0.121.20": str(REPO / "tests/tools/promptfoo/node_modules/.bin/promptfoo"),
    "inspect ": str(REPO / "tests/tools/inspect/.venv/bin/inspect") + " ",
    "pbpaste": "cat prompt.txt",
}
# The docs' "your OpenAI-compatible server" is the mock here.
YOUR_SERVER = "http://127.0.0.1:8080/v1"
# Commands not run here, and why.
SKIP = {
    "pip install": "installs from the package index (the network)",
    "gh ": "GitHub's gh CLI and a GitHub account",
    "npx promptfoo@0.121.20 view": "a web server that runs until stopped (the eval before it ran)",
    "inspect view": "a web server that runs until stopped (the eval before it ran)",
    "python3 -m venv .venv": "the README's install commands, checked on their own",
}
# Documented outcomes other than exit 0: (code, why).
EXPECT = {
    "npx promptfoo@0.121.20 eval": (100, "promptfoo's code when a test fails (the mock's answers)"),
    "promptgen configure --provider azure": (3, "configure's check call needs the Azure endpoint"),
    "promptgen configure --provider github": (3, "configure's check call needs GitHub Models"),
    "promptgen configure --provider ollama": (3, "configure's check call needs an Ollama server"),
    "--fail-under": (None, "a CI gate: exit 1 when the mock's answers score below the bar"),
    "--fail-on-regression": (None, "a CI gate: exit 1 when a figure fell"),
    "--fail-on-error": (None, "a CI gate: exit 1 on errors"),
}


def _prefixed(table: dict[str, object], command: Command) -> object | None:
    """The entry whose key starts the command (a key starting with `-` is a flag the
    command carries)."""
    words = command.words()
    line = " ".join(words)
    for key, value in table.items():
        if (key in words) if key.startswith("-") else (line + " ").startswith(key):
            return value
    return None


def _substituted(text: str, api_base: str) -> str:
    text = text.replace(YOUR_SERVER, api_base).replace("--api-base URL", f"--api-base {api_base}")
    for old, new in SUBSTITUTE.items():
        text = re.sub(rf"(^|&& |\| ){re.escape(old)}", lambda m, n=new: m.group(1) + n, text)
    return text


# ---------------------------------------------------------------- the scratch folder


CLASSIFY_JOKE = """---
name: classify-joke
description: Says whether a short text is a joke.
effort: medium
testsPerRule: 1
inputs:
  text:
    type: string
    description: A short text, one to three sentences.
    sample: Why did the scarecrow win an award? He was outstanding in his field.
---
system:
Decide whether the text is a joke (it is meant to make the reader laugh). Answer with
one word: joke or not-joke.

user:
{{text}}
"""


def _sample(name: str) -> str:
    return (REPO / "samples" / name).read_text(encoding="utf-8")


def make_sandbox(root: Path) -> None:
    """The files the docs name, as a user of such a tool would have them."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "samples", root / "samples", dirs_exist_ok=True)
    translate = _sample("translate-support-reply.prompty").replace("target_language", "language")
    (root / "my.prompty").write_text(
        translate.replace("name: translate-support-reply", "name: my"), "utf-8"
    )
    (root / "translate.prompty").write_text(
        translate.replace("name: translate-support-reply", "name: translate"), "utf-8"
    )
    (root / "classify.prompty").write_text(CLASSIFY_JOKE, "utf-8")
    prompts = root / "prompts"
    (prompts / "drafts").mkdir(parents=True, exist_ok=True)
    (prompts / "old").mkdir(exist_ok=True)
    (prompts / "support.prompty").write_text(_sample("classify-sentiment.prompty"), "utf-8")
    (prompts / "haiku.md").write_text(_sample("haiku.md"), "utf-8")
    # A Promptarchitect prompt with its system-role file and its tests folder beside it.
    shutil.copytree(REPO / "samples/promptarchitect", prompts, dirs_exist_ok=True)
    (prompts / "answer-from-article.prompt").rename(prompts / "support.prompt")
    (prompts / "drafts" / "title.txt").write_text(
        "Write a title of at most eight words for this article:\n\n{{article}}\n", "utf-8"
    )
    (prompts / "old" / "legacy.prompty").write_text(_sample("haiku.md"), "utf-8")
    (prompts / "notes.txt").write_text("todo: ask Sam about the Q3 launch date\n", "utf-8")
    (root / "other.md").write_text(_sample("haiku.md"), "utf-8")
    (root / "extra").mkdir(exist_ok=True)
    (root / "extra" / "review.md").write_text(_sample("haiku.md"), "utf-8")
    (root / "notes.txt").write_text(
        "You are a note taker. Turn the meeting transcript below into at most five bullet"
        " points, each naming who owns the action.\n\n{{transcript}}\n",
        "utf-8",
    )
    (root / "prompt.txt").write_text(
        "Classify the support ticket below as billing, bug or feature request. Answer"
        " with the label only.\n\nTicket: {{ticket}}\n",
        "utf-8",
    )
    (root / "prompt.py").write_text(
        "from openai import OpenAI\n\nclient = OpenAI()\n\n\n"
        "def shorten(text: str) -> str:\n"
        "    reply = client.chat.completions.create(\n"
        '        model="gpt-4o-mini",\n'
        "        messages=[\n"
        '            {"role": "system", "content": "Rewrite the text in plain words, at'
        ' most two sentences."},\n'
        '            {"role": "user", "content": f"Text: {text}"},\n'
        "        ],\n    )\n"
        "    return reply.choices[0].message.content or ''\n",
        "utf-8",
    )
    (root / "app.py").write_text(
        'QUIZ = """You write one multiple-choice question about {topic} for a {level}'
        ' student, with four options and the letter of the right one."""\n\n\n'
        "def prompt(topic: str, level: str) -> str:\n"
        "    return QUIZ.format(topic=topic, level=level)\n",
        "utf-8",
    )
    (root / "colours.schema.json").write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"colours": {"type": "array", "items": {"type": "string"}}},
                "required": ["colours"],
                "additionalProperties": False,
            }
        ),
        "utf-8",
    )
    lve = SHARED / "corpus" / "lve" / "repository"
    if lve.is_dir():
        shutil.copytree(lve, root / "repository", dirs_exist_ok=True)
        one = root / "repository/dummy/math/a_plus_b/openai--gpt-35-turbo"
        shutil.copytree(one, root / "path/to/lve", dirs_exist_ok=True)


MY_RUN = ".my-run"  # promptgen-out/my in every document's folder but the README's


def _prepare(root: Path, env: dict[str, str]) -> None:
    """Runs the docs take as already made (`promptgen-out/before`, `baseline/`, `old/`
    and `new/`, `out/`): earlier runs of the same prompt, made the documented way."""

    def run(*args: str) -> None:
        subprocess.run(["promptgen", *args], cwd=root, env=env, check=True, capture_output=True)

    run("my.prompty", "--models", "m", "--effort", "min", "--out", "promptgen-out/before")
    for name in ("promptgen-out/my-before", "baseline", "old", "runs/before", MY_RUN):
        shutil.copytree(root / "promptgen-out/before", root / name, dirs_exist_ok=True)
    run("my.prompty", "--models", "m", "--effort", "min", "--out", "new")
    run("samples/summarize.prompt.yml", "--models", "m", "--effort", "min", "--out", "out")
    run("classify.prompty", "--max-rules", "5")


# ---------------------------------------------------------------- running


@dataclass
class Outcome:
    command: Command
    code: int | None  # None: not run
    seconds: float
    last: str  # the last line of stderr (or stdout), or why it was not run
    ok: bool


def _last_line(out: str, err: str) -> str:
    for text in (err, out):
        lines = [x for x in text.strip().splitlines() if x.strip()]
        if lines:
            return lines[-1].strip()[:200]
    return ""


def run_all(template: Path, work: Path, env: dict[str, str], timeout: float) -> list[Outcome]:
    """Each document's commands in order, in its own copy of the scratch folder (a `cd`
    holds for the commands after it in the same code block); contributors' commands
    (`python bench/...`, `pytest`) in the checkout."""
    outcomes: list[Outcome] = []
    folders: dict[str, Path] = {}
    cwd_by_block: dict[tuple[str, int], Path] = {}
    for command in commands():
        skip = _prefixed(SKIP, command)
        if skip is not None:
            outcomes.append(Outcome(command, None, 0.0, f"not run: {skip}", True))
            continue
        if command.doc not in folders:
            folder = work / command.doc.replace("/", "_")
            shutil.copytree(template, folder, symlinks=True)
            if command.doc != "README.md":  # the README starts from nothing; the docs
                shutil.copytree(folder / MY_RUN, folder / "promptgen-out/my")  # from a run
            folders[command.doc] = folder
        block = (command.doc, command.block)
        words = command.words()
        cwd = cwd_by_block.get(block, folders[command.doc])
        cwd = REPO if words[0] in ("python", "python3", "pytest") else cwd
        if words[0] == "cd":
            target = cwd / words[1]
            ok = target.is_dir()
            if ok:
                cwd_by_block[block] = target
            outcomes.append(Outcome(command, 0 if ok else 1, 0.0, f"no folder {target}", ok))
            if not ok:
                print(f"FAIL      {command.where}: {command.text}: no folder {target}")
            continue
        outcomes.append(_run_one(command, cwd, env, timeout))
    return outcomes


def _run_one(command: Command, cwd: Path, env: dict[str, str], timeout: float) -> Outcome:
    words = command.words()
    text = _substituted(command.text, env["PROMPTGEN_API_BASE"])
    serve = words[:2] == ["promptgen", "view"] and "--serve" in words
    if serve:  # a server that runs until stopped: stopped after 5 s, as Ctrl-C would
        text = f"timeout -s INT 5 {text}"
    started = time.monotonic()
    try:
        done = subprocess.run(
            ["bash", "-c", text],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        code, last = done.returncode, _last_line(done.stdout, done.stderr)
        said = done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, last, said = None, f"timed out after {timeout:.0f} s", ""
    seconds = time.monotonic() - started
    expected = _prefixed(EXPECT, command)
    if serve:
        ok = code == 124 and "serving" in said
    elif words[:2] == ["promptgen", "configure"] and "--yes" not in words:
        ok = code == 2 and "--yes" in said  # questions need a terminal; it says so
    elif expected is not None:
        want, why = expected  # type: ignore[misc]
        ok = code in ((0, 1) if want is None else (0, want)) and "Traceback" not in said
        last = f"{last} [expected: {why}]" if code else last
    else:
        ok = code == 0
    outcome = Outcome(command, code, seconds, last, ok)
    mark = "ok  " if ok else "FAIL"
    print(f"{mark} {code!s:>4} {seconds:6.1f}s {command.where}: {command.text[:90]}")
    if not ok:
        print(f"           {last}")
    sys.stdout.flush()
    return outcome


def _environment(root: Path, api_base: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    env.update(
        PROMPTGEN_API_BASE=api_base,
        # The mock serves several models: a role with no model named would stop the run
        # with their list (docs/llm.md), so every role gets the id it was sent before.
        PROMPTGEN_MODEL="openai/default",
        OPENAI_API_KEY="sk-doc-commands-not-a-key",
        OPENAI_BASE_URL=api_base,
        GITHUB_TOKEN="ghp_doc_commands_not_a_token",
        HOME=str(root / "home"),
        XDG_CACHE_HOME=str(root / "home" / ".cache"),
        BROWSER="true",
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        INSPECT_LOG_DIR=str(root / "inspect-logs"),
    )
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (emptied)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    args = parser.parse_args()
    root: Path = args.out.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    mock = subprocess.Popen(
        [sys.executable, str(SHARED / "tools" / "mockllm.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert mock.stdout is not None
        port = mock.stdout.readline().split()[1]
        env = _environment(root, f"http://127.0.0.1:{port}/v1")
        template = root / "template"
        make_sandbox(template)
        _prepare(template, env)
        started = time.monotonic()
        outcomes = run_all(template, root, env, args.timeout)
    finally:
        mock.terminate()
        mock.wait()
    ran = [o for o in outcomes if o.code is not None or "timed out" in o.last]
    failed = [o for o in outcomes if not o.ok]
    print(
        f"\n{len(outcomes)} documented commands: {len(ran)} run, "
        f"{len(outcomes) - len(ran)} not run, {len(failed)} failed, "
        f"{time.monotonic() - started:.0f} s"
    )
    for o in outcomes:
        if o.code is None and "not run" in o.last:
            print(f"  {o.command.where}: {o.last}")
    for o in failed:
        print(f"  FAILED {o.command.where}: {o.command.text}\n         {o.last}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
