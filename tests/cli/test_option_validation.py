"""Bad option values are refused up front: exit 2, one line naming the flag (or the
frontmatter key and file), before any model call; and nothing is written outside --out.

Most cases run the command line in-process (`promptgen.cli.run_app`, what `main` runs)
against the fake server, without --dry-run, so a value that slipped through would make
calls; a few run the real `python -m promptgen` to check the same end to end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from promptgen import Context, load_prompt, prepare
from promptgen.api import DEFAULT_OUT, slug
from promptgen.cli import run_app
from promptgen.model import PromptUnderTest
from promptgen.options import MAX_CONCURRENCY, Options
from tests.conftest import REPO, run_cli
from tests.fakellm import FakeLLM, Reply
from tests.pipeline_fake import PipelineResponder

SAMPLE = str(REPO / "samples" / "classify-sentiment.prompty")
Write = Callable[[str, str | bytes], Path]

# (flag args, text the message must hold besides the flag); the flag is args[0].
BAD_FLAGS: list[tuple[list[str], str]] = [
    (["--fail-under", "150"], "at most 100"),
    (["--fail-under", "-1"], "at least 0"),
    (["--fail-under", "nan"], "finite"),
    (["--fail-on-error", "1.5"], "at most 1"),
    (["--fail-on-error", "nan"], "finite"),
    (["--concurrency", "0"], "at least 1"),
    (["--concurrency", str(MAX_CONCURRENCY + 1)], f"at most {MAX_CONCURRENCY}"),
    (["--temperature", "nan"], "finite"),
    (["--temperature", "inf"], "finite"),
    (["--temperature", "-inf"], "finite"),
    (["--temperature", "2.5"], "at most 2"),
    (["--temperature", "-0.1"], "at least 0"),
    (["--api-base", ""], "empty"),
    (["--api-base", "   "], "empty"),
    (["--api-base", "http://"], "no host"),
    (["--api-base", "http//x"], "not an http(s) URL"),
    (["--api-base", "file:///etc/passwd"], "not an http(s) URL"),
    (["--api-base", "ftp://example.com/v1"], "not an http(s) URL"),
    (["--api-base", "http://exa mple.com/v1"], "spaces"),
    (["--api-base", "http://127.0.0.1:99999/v1"], "not a URL"),
    (["--api-base", "http://user:pw@127.0.0.1/v1"], "credentials"),
    (["--effort", ""], "min, low, medium or high"),
    (["--effort", "max"], "min, low, medium or high"),
    (["--models", ""], "is empty; give model names or drop the flag"),
    (["--models", " ; "], "is empty; give model names or drop the flag"),
    (["--eval-models", ""], "is empty; give model names or drop the flag"),
    (["--groundtruth-eval-models", ""], "is empty"),
    (["--groundtruth-model", ""], "empty"),
    (["--rules-model", " "], "empty"),
    (["--runs-per-test", "0"], "at least 1"),
    (["--tests-per-rule", "0"], "at least 1"),
    (["--max-rules", "0"], "at least 1"),
    (["--max-rules-per-test-generation", "0"], "at least 1"),
    (["--test-generations", "0"], "at least 1"),
    (["--test-expansions", "-1"], "at least 0"),
    (["--max-tests-to-run", "0"], "at least 1"),
    (["--filter-tests", "0"], "at least 1"),
    (["--groundtruth-threshold", "101"], "at most 100"),
    (["--groundtruth-retries", "-1"], "at least 0"),
    (["--out", ""], "is empty"),
    (["--out", "/dev/null"], "is not a folder"),
    (["--junit", ""], "is empty"),
    (["--metric", ""], "is empty"),
    (["--check", ""], "is empty"),
    (["--concurrency", "abc"], "valid integer"),
    # Counts past their bound (they grew to 4 GB, then "internal error").
    (["--runs-per-test", "1000000000000"], "must be at most 1000 (accepted: 1-1000)"),
    (["--tests-per-rule", "100000000"], "must be at most 100 (accepted: 1-100)"),
    (["--max-rules", "1001"], "must be at most 1000 (accepted: 1-1000)"),
    (["--max-rules-per-test-generation", "1001"], "must be at most 1000"),
    (["--test-generations", "101"], "must be at most 100 (accepted: 1-100)"),
    (["--test-expansions", "101"], "must be at most 100 (accepted: 0-100)"),
    (["--max-tests-to-run", "100001"], "must be at most 100000 (accepted: 1-100000)"),
    (["--filter-tests", "100001"], "must be at most 100000"),
    (["--test-samples-count", "100001"], "must be at most 100000 (accepted: 0-100000)"),
    (["--groundtruth-retries", "101"], "must be at most 100 (accepted: 0-100)"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    """One fake server for the module (stopping one takes half a second)."""
    with FakeLLM(responder=PipelineResponder()) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeLLM) -> FakeLLM:
    server.reset()
    return server


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """Run `promptgen ARGS` in-process in a clean environment; (exit code, out, err)."""
    for name in list(os.environ):
        if name.startswith(("PROMPTGEN_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PROMPTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        code = run_app(args=list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run


def _assert_refused(code: int, out: str, err: str, *texts: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("promptgen: error: "), err
    for text in texts:
        assert text in lines[0], (text, lines[0])
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize(
    ("args", "text"), [pytest.param(a, t, id=" ".join(a) or "empty") for a, t in BAD_FLAGS]
)
def test_a_bad_flag_is_refused_before_any_call(
    cli: Callable[..., tuple[int, str, str]],
    fake: FakeLLM,
    tmp_path: Path,
    args: list[str],
    text: str,
) -> None:
    given = {args[0]}
    out = tmp_path / "out"
    base = {"--api-base": fake.url, "--out": str(out), "--models": "m1"}
    more = [x for flag, value in base.items() if flag not in given for x in (flag, value)]
    code, stdout, stderr = cli(SAMPLE, *more, "-q", *args)
    _assert_refused(code, stdout, stderr, args[0], text)
    assert fake.requests == []
    assert not out.exists()


def test_the_real_command_refuses_too(fake: FakeLLM, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    for args, text in (
        (["--api-base", ""], "--api-base '': empty"),
        (["--api-base", fake.url, "--fail-under", "nan"], "--fail-under nan: must be a"),
        (["--api-base", fake.url, "--models", ""], "--models is empty"),
    ):
        result = run_cli(SAMPLE, "--out", str(tmp_path / "o"), *args, env=env)
        _assert_refused(result.returncode, result.stdout, result.stderr, text)
    assert fake.requests == []


def test_an_unknown_flag_is_one_line(cli: Callable[..., tuple[int, str, str]]) -> None:
    code, out, err = cli(SAMPLE, "--no-such-flag")
    _assert_refused(code, out, err, "No such option: --no-such-flag", "promptgen run --help")


def test_out_inside_a_file_is_refused(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    code, out, err = cli(SAMPLE, "--dry-run", "--out", str(blocker / "sub"))
    _assert_refused(code, out, err, "--out", f"inside {blocker}, which is a file")
    code, out, err = cli(SAMPLE, "--dry-run", "--junit", str(tmp_path))
    _assert_refused(code, out, err, "--junit", "is a folder")


@pytest.mark.parametrize(
    ("make", "text"),
    [
        pytest.param(lambda d: d, "--metric names a folder", id="folder"),
        pytest.param(lambda d: d / "gone.metric.prompty", "--metric file not found", id="missing"),
        pytest.param(
            lambda d: _file(d / "judge.txt", "OK or ERR?"),
            "--metric takes a *.metric.prompty file",
            id="not-a-metric-name",
        ),
        pytest.param(
            lambda d: _file(d / "bad.metric.prompty", "---\nname: [x\n---\nhi\n"),
            "--metric: invalid frontmatter",
            id="unparseable",
        ),
        pytest.param(
            lambda d: _file(d / "empty.metric.prompty", ""), "--metric: file is empty", id="empty"
        ),
    ],
)
def test_a_bad_metric_file_is_refused(
    cli: Callable[..., tuple[int, str, str]],
    tmp_path: Path,
    make: Callable[[Path], Path],
    text: str,
) -> None:
    path = make(tmp_path)
    code, out, err = cli(SAMPLE, "--dry-run", "--models", "m1", "--metric", str(path))
    _assert_refused(code, out, err, str(path), text)


def _file(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "key", "text"),
    [
        ("testsPerRule: 0", "testsPerRule", "greater than or equal to 1"),
        ("runsPerTest: 0", "runsPerTest", "greater than or equal to 1"),
        ("maxRules: -3", "maxRules", "greater than or equal to 1"),
        ("filterTests: 0", "filterTests", "greater than or equal to 1"),
        ("testExpansions: -1", "testExpansions", "greater than or equal to 0"),
        ("runsPerTest: 1000000000000", "runsPerTest", "less than or equal to 1000"),
        ("testsPerRule: 100000000", "testsPerRule", "less than or equal to 100"),
        ('effort: ""', "effort", "'min', 'low', 'medium' or 'high'"),
    ],
)
def test_a_bad_frontmatter_value_names_key_file_and_line(
    cli: Callable[..., tuple[int, str, str]], write: Write, line: str, key: str, text: str
) -> None:
    path = write("p.prompty", f"---\nname: p\n{line}\n---\nuser:\nhi {{{{a}}}}\n")
    code, out, err = cli(str(path), "--dry-run")
    _assert_refused(code, out, err, f"{path}:3:", f"'{key}'", text)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--mutants", "1001"], "'--mutants': Input should be less than or equal to 1000"),
        (["--llm-mutants", "1001"], "'--llm-mutants': Input should be less than or equal to 1000"),
        (["--runs-per-test", "1000000000000"], "'--runs-per-test': Input should be less than"),
    ],
)
def test_mutate_counts_have_upper_bounds(
    cli: Callable[..., tuple[int, str, str]], fake: FakeLLM, args: list[str], text: str
) -> None:
    code, out, err = cli("mutate", SAMPLE, "--models", "m1", "--api-base", fake.url, *args)
    _assert_refused(code, out, err, text)
    assert fake.requests == []


def test_frontmatter_values_built_in_code_are_checked_when_resolved() -> None:
    prompt = PromptUnderTest(name="p", source="p.prompty", run_options={"runsPerTest": 0})
    with pytest.raises(Exception, match=r"^p\.prompty: frontmatter key runsPerTest = 0: must be"):
        prepare(prompt, Options())


def test_a_bad_saved_value_is_refused(
    cli: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    ctx = Context.new(load_prompt(SAMPLE))
    data = json.loads(ctx.to_json())
    data["options"]["models"]["api_base"] = "file:///etc/passwd"
    saved = tmp_path / "context.json"
    saved.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(str(saved), "--dry-run")
    _assert_refused(code, out, err, str(saved), "options.models.api_base", "http(s)")


def test_debug_keeps_the_exit_code(write: Write) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMPTGEN_", "OPENAI_"))}
    result = run_cli(
        SAMPLE, "--dry-run", "--fail-under", "150", env={**env, "PROMPTGEN_DEBUG": "1"}
    )
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "BadInputError" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("promptgen: error: --fail-under")


def test_debug_keeps_exit_code_3(
    cli: Callable[..., tuple[int, str, str]],
    fake: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    fake.queue(*[Reply(status=400)] * 50)  # every stage's calls fail: exit 3
    args = [SAMPLE, "--effort", "min", "--api-base", fake.url, "--out", str(tmp_path / "o")]
    code = run_app(debug=True, args=[*args, "-q"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "Traceback" in err and "stages did not finish" in err


# -- the output folder stays inside promptgen-out --------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("..", "prompt"),
        (".", "prompt"),
        ("../../etc", "etc"),
        ("/etc/passwd", "etc-passwd"),
        ("a/../../b", "a-..-..-b"),
        ("nul\x00byte", "nul-byte"),
        ("...hidden", "hidden"),
        ("Classify Joke", "classify-joke"),
        ("x" * 300, "x" * 80),
    ],
)
def test_slug_is_one_safe_folder_name(name: str, expected: str) -> None:
    assert slug(name) == expected
    folder = DEFAULT_OUT / slug(name)
    assert folder.parent == DEFAULT_OUT and folder.name not in ("", ".", "..")


def test_a_prompt_named_to_escape_writes_inside_its_folder(
    cli: Callable[..., tuple[int, str, str]], fake: FakeLLM, write: Write, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prompt = write("evil.prompty", "---\nname: ../../escape\n---\nsystem:\nSay {{x}}.\n")
    before = {p for p in tmp_path.rglob("*") if "cache" not in p.parts}
    os.chdir(work)
    code, _, err = cli(str(prompt), "--effort", "min", "--api-base", fake.url, "-q")
    assert code == 0, err
    after = {p for p in tmp_path.rglob("*") if "cache" not in p.parts} - before
    assert after and all(
        p.is_relative_to(work / "promptgen-out" / "escape")
        or p in (work / "promptgen-out", work / "promptgen-out" / "escape")
        for p in after
    ), after
    assert (work / "promptgen-out" / "escape" / "context.json").is_file()
