"""openai-evals and azure-evals: the bodies validate against the openai SDK's own types
(strictly: a misspelled key fails), carry what the run measured, and
`--create-eval-runs` sends them to a local Evals API."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from openai.types.eval_create_params import EvalCreateParams
from openai.types.evals.run_create_params import RunCreateParams
from pydantic import TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from promptgen.context import PASS_SCORE, Context
from promptgen.errors import BadInputError, PromptgenError
from promptgen.export import TARGETS
from promptgen.export.common import ExportResult, ExportSettings, expected_output, exported_tests
from promptgen.export.openai_evals import write_azure, write_openai
from promptgen.formats import load_prompt
from promptgen.results import MetricInfo, Test
from tests.export.conftest import SENTIMENT_TESTS, SavedRun
from tests.fake_evals import FakeEvals

Writer = Callable[[Context, Path, ExportSettings], ExportResult]
OUTPUT = "{{sample.output_text}}"


# -- strict validation against the SDK's TypedDicts --------------------------------------


def unknown_keys(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Keys of `value` that the TypedDict `tp` (and those nested in it) does not declare.
    pydantic ignores extra keys of a TypedDict and refuses a `config` for one in a
    TypeAdapter, so the keys are walked here against the annotations."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union:
        fits = [a for a in args if _fits(value, a)]
        found = [unknown_keys(value, a, path) for a in fits]
        return min(found, key=len) if found else []
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return []
        hints = get_type_hints(tp)
        problems = [f"{path}.{k}" for k in value if k not in hints]
        for key, item in value.items():
            if key in hints:
                problems += unknown_keys(item, hints[key], f"{path}.{key}")
        return problems
    if origin is not None and origin is not dict and len(args) == 1 and isinstance(value, list):
        return [p for i, v in enumerate(value) for p in unknown_keys(v, args[0], f"{path}[{i}]")]
    return []


def _fits(value: Any, tp: Any) -> bool:
    """Whether `value` can be this member of a union: a dict for a TypedDict whose
    Literal `type` (when it has one) is the value's."""
    if not is_typeddict(tp):
        return get_origin(tp) is not None and isinstance(value, list)
    if not isinstance(value, dict):
        return False
    declared = get_type_hints(tp).get("type")
    if declared is not None and get_origin(declared) is Literal:
        return value.get("type") in get_args(declared)
    return True


EVAL = TypeAdapter(EvalCreateParams)
RUN = TypeAdapter(RunCreateParams)


def validate(adapter: TypeAdapter[Any], tp: Any, body: dict[str, Any]) -> None:
    adapter.validate_python(body)
    extra = unknown_keys(body, tp)
    assert not extra, f"keys the SDK type does not declare: {extra}"


def export_to(ctx: Context, tmp: Path, writer: Writer, **kwargs: Any) -> Exported:
    out = tmp / writer.__name__
    return Exported(writer(ctx, out, ExportSettings(**kwargs)), out)


class Exported:
    def __init__(self, result: ExportResult, out: Path) -> None:
        self.result, self.out = result, out
        self.eval = json.loads((out / "eval.json").read_text())
        lines = (out / "items.jsonl").read_text().splitlines()
        self.items = [json.loads(line)["item"] for line in lines]
        runs = sorted((out / "runs").glob("*.json")) if (out / "runs").is_dir() else []
        self.runs = {p.name: json.loads(p.read_text()) for p in runs}

    def criterion(self, name: str) -> dict[str, Any]:
        return next(c for c in self.eval["testing_criteria"] if c["name"] == name)


# -- the bodies are what the SDK takes ----------------------------------------------------


@pytest.mark.parametrize("writer", [write_openai, write_azure])
@pytest.mark.parametrize("run", ["sentiment_run", "summarize_run"])
def test_bodies_validate_against_the_sdk_types(
    run: str, writer: Writer, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    saved: SavedRun = request.getfixturevalue(run)
    got = export_to(saved.ctx, tmp_path, writer)
    validate(EVAL, EvalCreateParams, got.eval)
    for body in got.runs.values():
        validate(RUN, RunCreateParams, body)
    expected_runs = 1 if (run, writer) != ("summarize_run", write_azure) else 0
    assert len(got.runs) == expected_runs


def test_strict_validation_rejects_a_misspelled_key(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    got = export_to(sentiment_run.ctx, tmp_path, write_openai)
    wrong = json.loads(json.dumps(got.eval))
    scorer = next(c for c in wrong["testing_criteria"] if c["type"] == "score_model")
    scorer["passing_threshold"] = scorer.pop("pass_threshold")
    wrong["data_source_config"]["include_sample_schem"] = True
    EVAL.validate_python(wrong)  # pydantic alone lets both through ...
    assert unknown_keys(wrong, EvalCreateParams) == [  # ... the walk does not
        "$.data_source_config.include_sample_schem",
        "$.testing_criteria[1].passing_threshold",
    ]
    with pytest.raises(AssertionError, match="include_sample_schem"):
        validate(EVAL, EvalCreateParams, wrong)
    run = json.loads(json.dumps(next(iter(got.runs.values()))))
    run["data_source"]["sampling_params"]["max_tokens"] = 50
    assert unknown_keys(run, RunCreateParams) == ["$.data_source.sampling_params.max_tokens"]
    run["data_source"]["type"] = "completion"  # not a data source type at all
    with pytest.raises(ValidationError):
        RUN.validate_python(run)


# -- what the eval measures ----------------------------------------------------------------


def test_sentiment_eval_has_one_criterion_per_exportable_metric(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    got = export_to(sentiment_run.ctx, tmp_path, write_openai)
    shape = [(c["name"], c["type"]) for c in got.eval["testing_criteria"]]
    assert shape == [
        ("compliance", "label_model"),
        ("accuracy", "score_model"),
        ("classify-sentiment-compliance", "score_model"),
        ("icontains=answer", "string_check"),
    ]
    compliance = got.criterion("compliance")
    assert compliance["labels"] == ["ok", "err"] and compliance["passing_labels"] == ["ok"]
    assert compliance["model"] == "gpt-4o-mini"
    judged = compliance["input"][-1]["content"]
    assert "{{item.input}}" in judged and OUTPUT in judged
    for name in ("accuracy", "classify-sentiment-compliance"):
        scorer = got.criterion(name)
        assert scorer["range"] == [0, 100]
        assert scorer["pass_threshold"] == PASS_SCORE == 50
        assert scorer["sampling_params"] == {"temperature": 0}
    accuracy = "\n".join(m["content"] for m in got.criterion("accuracy")["input"])
    assert "<REFERENCE>\n{{item.expected}}\n</REFERENCE>" in accuracy
    assert f"<CANDIDATE>\n{OUTPUT}\n</CANDIDATE>" in accuracy
    custom = got.criterion("classify-sentiment-compliance")["input"]
    assert [m["role"] for m in custom] == ["system", "user"]
    assert "<review>\n{{item.input}}\n</review>" in custom[1]["content"]
    assert f"<answer>\n{OUTPUT}\n</answer>" in custom[1]["content"]
    assert "{{input}}" not in custom[1]["content"] and "{% if" not in custom[0]["content"]
    # the run's rules fill the metric's {% if rules %} block
    assert sentiment_run.ctx.rules[0].text in custom[0]["content"]
    check = got.criterion("icontains=answer")
    assert (check["operation"], check["input"], check["reference"]) == ("ilike", OUTPUT, "answer")
    assert got.result.skipped[:3] == [
        "check 'not-contains=VIOLATION': not exportable: "
        "string_check has no 'does not contain' operation",
        "check 'word-count={max: 40}': not exportable: OpenAI Evals has no grader that "
        "counts words",
        "check 'regex=^[a-z]': not exportable: OpenAI Evals has no regex grader",
    ]
    assert got.eval["name"] == "classify-sentiment"
    assert got.eval["metadata"] == {
        "promptgen_run_id": sentiment_run.ctx.run_id,
        "promptgen_prompt": "classify-sentiment",
        "promptgen_version": sentiment_run.ctx.promptgen_version,
    }


def test_items_are_the_exported_tests(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx
    got = export_to(ctx, tmp_path, write_openai)
    tests = exported_tests(ctx)
    assert len(got.items) == len(tests) == SENTIMENT_TESTS
    fields = {"review", "input", "expected", "test_id", "rule_id", "scenario", "inverse"}
    assert all(set(item) == fields for item in got.items)
    schema = got.eval["data_source_config"]["item_schema"]
    assert set(schema["properties"]) == fields == set(schema["required"])
    assert got.eval["data_source_config"]["include_sample_schema"] is True
    for item, test in zip(got.items, tests, strict=True):
        assert item["test_id"] == test.id
        assert item["review"] == item["input"] == test.inputs["review"]
        assert item["expected"] == expected_output(test) and item["expected"].startswith("gt ")
        assert item["rule_id"] == (test.rule_id or "") and item["inverse"] is test.inverse


def test_one_run_per_model_each_platform_runs(sentiment_run: SavedRun, tmp_path: Path) -> None:
    ctx = sentiment_run.ctx
    openai = export_to(ctx, tmp_path, write_openai)
    azure = export_to(ctx, tmp_path, write_azure)
    assert list(openai.runs) == ["gpt-4o-mini.json"]
    assert list(azure.runs) == ["my-deployment.json"]
    assert openai.result.skipped[-1] == (
        "model azure/my-deployment: not an OpenAI model; "
        "the azure-evals target takes it, or run it with promptgen"
    )
    assert azure.result.skipped[-1] == (
        "model openai/gpt-4o-mini: not an Azure OpenAI deployment (azure/<deployment>); "
        "the openai-evals target takes it, or run it with promptgen"
    )
    for got, model in ((openai, "gpt-4o-mini"), (azure, "my-deployment")):
        run = next(iter(got.runs.values()))
        source = run["data_source"]
        assert (source["type"], source["model"]) == ("completions", model)
        assert source["sampling_params"] == {"temperature": 0.2, "max_completion_tokens": 50}
        template = source["input_messages"]
        assert template["type"] == "template"
        assert [m["role"] for m in template["template"]] == ["system", "user"]
        assert template["template"][1]["content"] == "{{item.review}}"
        assert source["source"]["type"] == "file_content"
        assert [row["item"] for row in source["source"]["content"]] == got.items
        assert run["metadata"]["promptgen_run_id"] == ctx.run_id
    # exporting again with other models leaves no run body of the earlier ones
    again = export_to(ctx, tmp_path, write_openai, models=["openai/gpt-4.1", "local/x"])
    assert list(again.runs) == ["gpt-4.1.json"]
    assert again.result.skipped[-1] == "model local/x: not an OpenAI model; run it with promptgen"
    # the grader deployment on Azure is a placeholder, said so
    assert azure.criterion("compliance")["model"] == "gpt-4o-mini"
    assert any("placeholder deployment 'gpt-4o-mini'" in n for n in azure.result.notes)


def test_grader_is_the_runs_first_eval_model_when_the_platform_has_it(
    sentiment_run: SavedRun, tmp_path: Path
) -> None:
    ctx = sentiment_run.ctx.model_copy(deep=True)
    ctx.options.models.eval_models = ["openai/gpt-4.1", "azure/judge"]
    got = export_to(ctx, tmp_path, write_openai)
    models = {c.get("model") for c in got.eval["testing_criteria"] if c["type"] != "string_check"}
    assert models == {"gpt-4.1"}
    assert not any(n.startswith("grader model") for n in got.result.notes)
    ctx.options.models.eval_models = ["azure/judge"]
    azure = export_to(ctx, tmp_path / "a", write_azure)
    assert azure.criterion("accuracy")["model"] == "judge"
    openai = export_to(ctx, tmp_path / "o", write_openai)
    assert openai.criterion("accuracy")["model"] == "gpt-4o-mini"
    assert (
        "grader model: the run's eval model azure/judge is not an OpenAI model; the graders "
        "use gpt-4o-mini"
    ) in openai.result.notes


def test_summarize_keeps_its_input_named_input(summarize_run: SavedRun, tmp_path: Path) -> None:
    """The prompt has an input called `input`: promptgen's own field moves aside."""
    got = export_to(summarize_run.ctx, tmp_path, write_openai)
    assert list(got.eval["data_source_config"]["item_schema"]["properties"]) == [
        "audience", "input", "promptgen_input", "expected", "test_id", "rule_id", "scenario",
        "inverse",
    ]  # fmt: skip
    first = got.items[0]
    assert first["input"].startswith("The city council voted 7 to 2")
    assert json.loads(first["promptgen_input"]) == {"audience": "general", "input": first["input"]}
    assert first["expected"].startswith("Summary: The council voted 7-2")
    assert sum(bool(i["expected"]) for i in got.items) == 2  # the author's two samples
    judged = got.criterion("compliance")["input"][-1]["content"]
    assert "<INPUT>\n{{item.promptgen_input}}\n</INPUT>" in judged
    template = got.runs["gpt-4o-mini.json"]["data_source"]["input_messages"]["template"]
    assert template[1]["content"].endswith("a {{item.audience}} reader:\n\n{{item.input}}")
    assert [c["name"] for c in got.eval["testing_criteria"]] == ["compliance"]
    assert got.result.skipped == [
        "check 'starts with the summary label': not exportable: "
        "string_check has no starts-with operation"
    ]


# -- a prompt of our own: template logic, checks ------------------------------------------

LOGIC_PROMPT = """---
name: greet
model:
  parameters: {temperature: 0, seed: 7, top_p: 0.5, stop: ["\\n\\n"]}
inputs:
  name: {type: string}
  formal: {type: string, default: ""}
checks:
  - equals: "{{expected}}"
  - not-equals: "Hi"
  - contains: "{{name}}"
  - levenshtein: {value: "Hello", threshold: 2}
  - not-icontains: rude
  - equals: {a: 1}
---
system:
{% if formal %}Greet the person formally.{% else %}Greet the person.{% endif %}

user:
{{name}}
"""


def logic_context(write: Callable[[str, str], Path]) -> Context:
    prompt = load_prompt(write("greet.prompty", LOGIC_PROMPT))
    tests = [
        Test(id="t1", inputs={"name": "Ada", "formal": "yes"}, origin="sample",
             expected_output="Good day, Ada."),
        Test(id="t2", inputs={"name": "Bo"}),
    ]  # fmt: skip
    return Context(prompt=prompt, tests=tests, options={"models": {"models": ["gpt-4o"]}})


def test_template_logic_exports_rendered_messages(
    write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    got = export_to(logic_context(write), tmp_path, write_openai)
    (run,) = got.runs.values()
    validate(RUN, RunCreateParams, run)
    validate(EVAL, EvalCreateParams, got.eval)
    assert run["data_source"]["input_messages"] == {
        "type": "item_reference",
        "item_reference": "item.messages",
    }
    assert [i["messages"] for i in got.items] == [
        [
            {"role": "system", "content": "Greet the person formally."},
            {"role": "user", "content": "Ada"},
        ],
        [{"role": "system", "content": "Greet the person."}, {"role": "user", "content": "Bo"}],
    ]
    schema = got.eval["data_source_config"]["item_schema"]["properties"]
    assert schema["messages"]["type"] == "array"
    assert run["data_source"]["sampling_params"] == {"temperature": 0.0, "seed": 7, "top_p": 0.5}
    assert "parameter stop: an OpenAI Evals completions run does not take it" in (
        got.result.skipped
    )


def test_checks_map_only_where_the_operation_is_the_same(
    write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    got = export_to(logic_context(write), tmp_path, write_openai)
    checks = [
        (c["name"], c["operation"], c["reference"])
        for c in got.eval["testing_criteria"]
        if c["type"] == "string_check"
    ]
    assert checks == [
        ("equals={{expected}}", "eq", "{{item.expected}}"),
        ("not-equals=Hi", "ne", "Hi"),
        ("contains={{name}}", "like", "{{item.name}}"),
    ]
    assert got.result.skipped == [
        'check \'levenshtein={"value": "Hello", "threshold": 2}\': not exportable: '
        "text_similarity's fuzzy_match is a 0-1 similarity, not an edit distance; "
        "no threshold matches the check",
        "check 'not-icontains=rude': not exportable: "
        "string_check has no 'does not contain' operation",
        "check 'equals={\"a\": 1}': not exportable: compares as JSON; string_check compares text",
        "parameter stop: an OpenAI Evals completions run does not take it",
    ]
    # the test without a reference answer carries ""
    assert [i["expected"] for i in got.items] == ["Good day, Ada.", ""]


JUDGE = """---
name: polite
---
system:
Answer OK when the greeting to {{name}} is polite, else ERR.

user:
Prompt: {{prompt}}
Reference: {{groundtruth}}
Greeting: {{output}}
"""


def test_judges_of_every_kind(write: Callable[[str, str], Path], tmp_path: Path) -> None:
    ctx = logic_context(write)
    judge = write("polite.metric.prompty", JUDGE)
    ctx.metrics = [
        MetricInfo(name="accuracy", kind="accuracy", scorer=True),
        MetricInfo(name="polite", kind="custom", source=str(judge)),
        MetricInfo(name="custom-1", kind="custom", description="Is it short?"),
        MetricInfo(name="gone", kind="custom", source=str(tmp_path / "gone.metric.prompty")),
        MetricInfo(name="groundtruth", kind="groundtruth", scorer=True),
    ]
    got = export_to(ctx, tmp_path, write_openai)
    assert [(c["name"], c["type"]) for c in got.eval["testing_criteria"]] == [
        ("accuracy", "score_model"),
        ("polite", "label_model"),
    ]
    polite = got.criterion("polite")
    assert (polite["labels"], polite["passing_labels"]) == (["ok", "err"], ["ok"])
    assert polite["input"][0]["content"] == (
        "Answer OK when the greeting to {{item.name}} is polite, else ERR."
    )
    user = polite["input"][1]["content"]
    assert "Reference: {{item.expected}}\nGreeting: {{sample.output_text}}" in user
    assert "Greet the person formally." in user  # the prompt's text, as its author wrote it
    assert got.result.notes[1] == (
        "metric 'accuracy': 1 of 2 items have no reference answer; the grader compares "
        "their outputs with an empty one"
    )
    assert got.result.skipped[:3] == [
        "metric 'custom-1': an inline --custom-metric has no file to export",
        f"metric 'gone': its file {tmp_path / 'gone.metric.prompty'} is not found",
        "metric 'groundtruth': scores groundtruth answers, not outputs; not exported",
    ]
    ctx.tests = [ctx.tests[1]]  # no reference answer left
    again = export_to(ctx, tmp_path / "again", write_openai)
    assert [c["name"] for c in again.eval["testing_criteria"]] == ["polite"]
    assert again.result.skipped[0] == "metric 'accuracy': no exported test has a reference answer"


def test_export_registry_reaches_both_writers(sentiment_run: SavedRun, tmp_path: Path) -> None:
    for name in ("openai-evals", "azure-evals"):
        result = TARGETS[name].writer(sentiment_run.ctx, tmp_path / name, ExportSettings())
        assert result.target == name
    assert (tmp_path / "openai-evals" / "runs" / "gpt-4o-mini.json").is_file()
    assert (tmp_path / "azure-evals" / "runs" / "my-deployment.json").is_file()


# -- --create-eval-runs against a local Evals API ------------------------------------------


@pytest.fixture
def evals_api() -> Iterator[FakeEvals]:
    with FakeEvals() as api:
        yield api


KEY = "sk-test-0123456789abcdef"


def test_create_eval_runs_sends_the_bodies(
    sentiment_run: SavedRun, tmp_path: Path, evals_api: FakeEvals, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", evals_api.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    got = export_to(sentiment_run.ctx, tmp_path, write_openai, create_eval_runs=True)
    state = evals_api.state
    ((file_id, upload),) = state.files.items()
    assert upload.purpose == "evals" and upload.filename == "items.jsonl"
    assert upload.content == (got.out / "items.jsonl").read_bytes()
    assert [json.loads(line)["item"] for line in upload.content.splitlines()] == got.items
    ((eval_id, received),) = state.evals.items()
    assert received == got.eval
    ((run_id, run),) = state.runs.items()
    assert run["data_source"]["source"] == {"type": "file_id", "id": file_id}
    assert run["data_source"]["model"] == "gpt-4o-mini"
    written = got.runs["gpt-4o-mini.json"]
    assert {**run, "data_source": {**run["data_source"], "source": None}} == {
        **written, "data_source": {**written["data_source"], "source": None}
    }  # fmt: skip
    created_text = (got.out / "created.json").read_text()
    created = json.loads(created_text)
    assert created["eval_id"] == eval_id and created["file_id"] == file_id
    assert [(r["model"], r["run_id"]) for r in created["runs"]] == [("gpt-4o-mini", run_id)]
    assert created["runs"][0]["report_url"].endswith(f"run_id={run_id}")
    assert KEY not in created_text
    assert f"created eval {eval_id} (items file {file_id})" in got.result.notes
    assert state.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert [r.path for r in state.requests] == [
        "/v1/files",
        "/v1/evals",
        f"/v1/evals/{eval_id}/runs",
    ]


def test_create_eval_runs_on_azure(
    sentiment_run: SavedRun, tmp_path: Path, evals_api: FakeEvals, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_API_BASE", evals_api.endpoint)  # litellm's name works too
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    monkeypatch.delenv("AZURE_API_VERSION", raising=False)
    got = export_to(sentiment_run.ctx, tmp_path, write_azure, create_eval_runs=True)
    state = evals_api.state
    (file_id,) = state.files
    (eval_id,) = state.evals
    ((run_id, run),) = state.runs.items()
    assert run["data_source"]["model"] == "my-deployment"
    assert run["data_source"]["source"] == {"type": "file_id", "id": file_id}
    assert [r.path for r in state.requests] == [
        "/openai/files", "/openai/evals", f"/openai/evals/{eval_id}/runs",
    ]  # fmt: skip
    for request in state.requests:
        assert request.query["api-version"] == ["2025-04-01-preview"]
        assert request.headers["api-key"] == KEY and request.headers["aoai-evals"] == "preview"
    created_text = (got.out / "created.json").read_text()
    assert json.loads(created_text)["runs"][0]["run_id"] == run_id
    assert KEY not in created_text


def test_a_failed_call_says_what_was_created(
    sentiment_run: SavedRun, tmp_path: Path, evals_api: FakeEvals, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", evals_api.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    evals_api.state.fail["runs"] = 400
    with pytest.raises(PromptgenError) as caught:
        export_to(sentiment_run.ctx, tmp_path, write_openai, create_eval_runs=True)
    assert caught.value.exit_code == 3
    assert caught.value.one_line() == (
        "--create-eval-runs: creating the run for gpt-4o-mini failed: HTTP 400: runs refused "
        "by the fake; created before it: file file-0001, eval eval_0001 (see created.json)"
    )
    created = json.loads((tmp_path / "write_openai" / "created.json").read_text())
    assert (created["file_id"], created["eval_id"], created["runs"]) == (
        "file-0001", "eval_0001", [],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("writer", "env", "missing"),
    [
        (write_openai, {}, "OPENAI_API_KEY"),
        (write_azure, {"AZURE_OPENAI_API_KEY": KEY}, "AZURE_OPENAI_ENDPOINT"),
        (write_azure, {"AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9"}, "AZURE_OPENAI_API_KEY"),
    ],
)
def test_a_missing_key_is_bad_input(
    sentiment_run: SavedRun,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    writer: Writer,
    env: dict[str, str],
    missing: str,
) -> None:
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "AZURE_API_BASE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(BadInputError) as caught:
        export_to(sentiment_run.ctx, tmp_path, writer, create_eval_runs=True)
    assert caught.value.exit_code == 2
    assert caught.value.one_line().startswith(f"--create-eval-runs: {missing} is not set (")
    assert not (tmp_path / writer.__name__ / "created.json").exists()


def test_an_unwritable_folder_is_bad_input(sentiment_run: SavedRun, tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a folder")
    with pytest.raises(BadInputError) as caught:
        write_openai(sentiment_run.ctx, blocker, ExportSettings())
    assert caught.value.one_line().startswith(f"{blocker}: cannot write the openai-evals export")
