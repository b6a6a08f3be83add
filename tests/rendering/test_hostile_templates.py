"""Hostile templates: each is refused quickly, with bounded memory and one clear error.

Every template here would write gigabytes, run for hours, overflow the stack or reach
Python internals without promptgen.rendering.sandbox's limits (promptgen.bounds).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from promptgen import render_template
from promptgen.errors import RenderError, TemplateSecurityError
from tests.cli.test_hostile_input import in_process
from tests.conftest import run_cli

HOSTILE: list[tuple[str, str, str]] = [
    # id, Jinja2 template, text the one-line error must contain
    ("ljust", "{{ 'x'.ljust(10**9) }}", "with ljust() of 1,000,000,000 characters"),
    ("rjust", "{{ 'x'.rjust(10**9, '-') }}", "with rjust()"),
    ("center-method", "{{ 'x'.center(10**9) }}", "with center()"),
    ("zfill", "{{ '1'.zfill(10**9) }}", "with zfill()"),
    ("expandtabs", "{{ ('\t' * 1000).expandtabs(10**6) }}", "with expandtabs()"),
    ("replace-method", "{{ ('a' * 10000).replace('a', 'b' * 10000) }}", "with replace()"),
    ("translate", "{{ ('a' * 100000).translate({97: 'b' * 10000}) }}", "with translate()"),
    ("join-method", "{{ ('x' * 1000).join(range(100000)|map('string')) }}", "joined string"),
    ("join-filter", "{{ range(100000)|join('x' * 1000) }}", "joined string"),
    ("format-width", "{{ '{:>999999999}'.format(1) }}", "formatted string"),
    ("format-nested-width", "{{ '{:{}}'.format(1, 999999999) }}", "formatted string"),
    ("format-precision", "{{ '{:.999999999f}'.format(1.0) }}", "formatted string"),
    ("format-map", "{{ '{a:>999999999}'.format_map({'a': 1}) }}", "formatted string"),
    ("percent-width", "{{ '%999999999d' % 1 }}", "%-formatted string"),
    ("percent-star", "{{ '%*d' % (999999999, 1) }}", "%-formatted string"),
    ("percent-mapping", "{{ ('%(a)s' * 100000) % {'a': 'x' * 1000} }}", "%-formatted"),
    ("format-filter", "{{ '%999999999s'|format('x') }}", "formatted string"),
    ("string-repeat", "{{ 'ab' * 10**8 }}", "repeated string"),
    ("list-repeat", "{{ [1, 2] * 10**7 }}", "repeated list"),
    ("concat-doubling", "{% set ns = namespace(s='x' * 1000000) %}"
     "{% for i in range(10) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "or more"),
    ("plus-doubling", "{% set ns = namespace(s='x' * 1000000) %}"
     "{% for i in range(10) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "or more"),
    ("print-shared-list", "{% set l = ['x' * 100000] * 1000 %}{{ l }}", "the text of a value"),
    ("string-filter", "{% set l = ['x' * 100000] * 1000 %}{{ l|string|length }}", "text of a"),
    ("upper-of-list", "{% set l = ['x' * 100000] * 1000 %}{{ l|upper }}", "text of a value"),
    ("indent", "{{ ('a\n' * 1000)|indent(10**6) }}", "indented string"),
    ("center-filter", "{{ 'a'|center(10**9) }}", "or more"),
    ("wordwrap", "{{ ('a ' * 10000)|wordwrap(1, wrapstring='x' * 10000) }}", "wrapped string"),
    ("batch-fill", "{{ [1]|batch(10**8, 'x')|list|length }}", "items"),
    ("slice", "{{ [1]|slice(10**8)|list|length }}", "items"),
    ("list-of-chars", "{{ ('x' * 5000000)|list|length }}", "list of characters"),
    ("split", "{{ ('a,' * 5000000).split(',')|length }}", "with split()"),
    ("tojson-indent", "{% set l = ['x' * 100000] * 100 %}{{ l|tojson(indent=100) }}", "JSON"),
    ("huge-range", "{% for i in range(10**9) %}{% endfor %}", "range of 1,000,000,000 numbers"),
    ("nested-range-loops", "{% for i in range(100000) %}{% for j in range(100000) %}"
     "{% endfor %}{% endfor %}", "takes more than"),
    ("loop-over-string", "{% for c in 'x' * 10000000 %}{% endfor %}", "takes more than"),
    ("macro-fork-bomb", "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}"
     "{% endmacro %}{{ f(40) }}", "takes more than"),
    ("recursive-loop", "{% for x in range(10) recursive %}{% if loop.depth < 9 %}"
     "{{ loop(range(10)) }}{% endif %}{% endfor %}", "takes more than"),
    ("macro-output", "{% set s = 'x' * 1000000 %}{% macro m() %}{% for i in range(1000) %}"
     "{{ s }}{% endfor %}{% endmacro %}{{ m() }}", "renders more than 25,000,000 characters"),
    ("built-in-all", "{% set ns = namespace(l=[]) %}{% for i in range(200) %}"
     "{% set ns.l = ns.l + ['x' * 1000000] %}{% endfor %}", "100,000,000 characters in all"),
    ("joiner", "{% set j = joiner('x' * 1000000) %}{% for i in range(100) %}{{ j() }}{% endfor %}",
     "renders more than"),
    ("cycler", "{% set c = cycler('x' * 1000000) %}{% for i in range(100) %}{{ c.next() }}"
     "{% endfor %}", "renders more than"),
    ("lipsum", "{{ lipsum(1, False, 1000000, 1000000) }}", "lipsum()"),
    ("power", "{{ 9 ** 999999 }}", "exponent 999999"),
    ("int-squaring", "{% set ns = namespace(x=10**1000) %}{% for i in range(30) %}"
     "{% set ns.x = ns.x * ns.x %}{% endfor %}", "number that is too large"),
    ("class", "{{ ''.__class__ }}", "reaches for '__class__'"),
    ("mro", "{{ ''.__class__.mro() }}", "reaches for '__class__'"),
    ("subclasses", "{{ ''.__class__.__mro__[1].__subclasses__() }}", "__class__"),
    ("cycler-globals", "{{ cycler.__init__.__globals__ }}", "reaches for '__init__'"),
    ("joiner-globals", "{{ joiner.__init__.__globals__.os }}", "reaches for '__init__'"),
    ("namespace-globals", "{{ namespace.__init__.__globals__ }}", "reaches for '__init__'"),
    ("lipsum-globals", "{{ lipsum.__globals__['os'] }}", "reaches for '__globals__'"),
    ("self-context", "{{ self._TemplateReference__context }}", "_TemplateReference__context"),
    ("attr-filter", "{{ '' | attr('__class__') }}", "reaches for '__class__'"),
    ("format-attribute", "{{ '{0.__class__}'.format(1) }}", "reaches for '__class__'"),
    ("dict-mro", "{{ dict.mro() }}", "reaches for 'mro'"),
    ("mutation", "{{ [1].append(2) }}", "reaches for 'append'"),
    ("loop-internals", "{% for i in [1] %}{{ loop.__class__ }}{% endfor %}", "__class__"),
]  # fmt: skip

NESTED: list[tuple[str, str, str]] = [
    ("if-100", "{% if 1 %}" * 100 + "x" + "{% endif %}" * 100, "nests blocks more than 16"),
    ("for-25", "{% for i in [1] %}" * 25 + "x" + "{% endfor %}" * 25, "nests blocks"),
    ("with-20", "{% with %}" * 20 + "x" + "{% endwith %}" * 20, "nests blocks"),
    ("parens-100", "{{ " + "(" * 100 + "1" + ")" * 100 + " }}", "nests brackets more than 32"),
    ("lists-100", "{{ " + "[" * 100 + "]" * 100 + " }}", "nests brackets"),
    ("long-sum", "{{ " + " + ".join(["1"] * 3000) + " }}", "nested too deeply to compile"),
    ("many-tags", "{{ x }}" * 10_001, "10,001 tags"),
]

MUSTACHE: list[tuple[str, str, dict[str, object], str]] = [
    ("sections-20", "{{#a}}" * 20 + "{{/a}}" * 20, {"a": True}, "sections nested more than 16"),
    ("section-product", "{{#a}}{{#a}}{{#a}}{{#a}}x{{/a}}{{/a}}{{/a}}{{/a}}",
     {"a": list(range(1000))}, "takes more than"),
    ("output", "{{#a}}{{b}}{{/a}}", {"a": list(range(100)), "b": "x" * 1000000}, "renders more"),
    ("value-text", "{{x}}", {"x": ["y" * 100000] * 1000}, "the text of a value"),
    ("private", "{{x.__class__}}", {"x": 1}, "private or internal name"),
]  # fmt: skip

SAFE: list[tuple[str, str, str]] = [
    ("{{ 'x'.ljust(5) }}|", "x    |", "jinja2"),
    ("{{ '{:>5}|{:.2f}'.format(1, 3.14159) }}", "    1|3.14", "jinja2"),
    ("{{ '%3d|%s' % (7, 'a') }}", "  7|a", "jinja2"),
    ("{{ 'a' ~ 1 ~ [2] }}", "a1[2]", "jinja2"),
    ("{{ ['a', 'b']|join(', ') }} {{ 'x'|center(5) }}|", "a, b   x  |", "jinja2"),
    ("{{ 'l1\nl2'|indent(2, first=True) }}", "  l1\n  l2", "jinja2"),
    ("{% for i in range(3) %}{{ loop.index }}{{ loop.last }}{% endfor %}", "1False2False3True",
     "jinja2"),
    ("{% for i in [] %}x{% else %}empty{% endfor %}", "empty", "jinja2"),
    ("{% set x %}hi{% endset %}{{ x }}", "hi", "jinja2"),
    ("{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}", "aba", "jinja2"),
    ("{{ {'a': 1}|tojson }}", '{"a": 1}', "jinja2"),
    ("{{ 2 ** 10 }} {{ 'ab' * 2 }}", "1024 abab", "jinja2"),
    ("{% for x in tree recursive %}{{ x.n }}{{ loop(x.kids) }}{% endfor %}", "123", "jinja2"),
    ("{{#items}}[{{.}}]{{/items}}", "[1][2]", "mustache"),
]  # fmt: skip

VALUES = {"tree": [{"n": 1, "kids": [{"n": 2, "kids": []}]}, {"n": 3, "kids": []}],
          "items": [1, 2]}  # fmt: skip


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize(("template", "text"), [pytest.param(*c[1:], id=c[0]) for c in HOSTILE])
def test_hostile_template_is_refused_quickly(template: str, text: str) -> None:
    before, started = _peak_mb(), time.monotonic()
    with pytest.raises(TemplateSecurityError) as info:
        render_template(template, {}, file="p.prompty", line=5)
    assert text in info.value.message
    assert info.value.one_line().startswith("p.prompty:5: ")
    assert "\n" not in info.value.one_line()
    assert time.monotonic() - started < 10
    assert _peak_mb() - before < 500  # never the gigabytes the template asks for


@pytest.mark.parametrize(("template", "text"), [pytest.param(*c[1:], id=c[0]) for c in NESTED])
def test_deep_nesting_is_a_render_error(template: str, text: str) -> None:
    with pytest.raises(RenderError) as info:
        render_template(template, {"x": 1}, file="p.prompty", line=3)
    assert text in info.value.message
    assert info.value.file == "p.prompty" and info.value.line is not None


@pytest.mark.parametrize(
    ("template", "values", "text"), [pytest.param(*c[1:], id=c[0]) for c in MUSTACHE]
)
def test_hostile_mustache_is_refused(template: str, values: dict[str, object], text: str) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateSecurityError) as info:
        render_template(template, values, engine="mustache")
    assert text in info.value.message
    assert time.monotonic() - started < 10


def test_steps_limit_names_steps() -> None:
    with pytest.raises(TemplateSecurityError, match="more than 250,000 steps"):
        render_template("{% for i in range(100000) %}{% for j in range(10) %}"
                        "{% endfor %}{% endfor %}", {})  # fmt: skip


@pytest.mark.parametrize(("template", "expected", "engine"), SAFE)
def test_ordinary_templates_still_render(template: str, expected: str, engine: str) -> None:
    assert render_template(template, VALUES, engine=engine) == expected


def test_budget_is_per_render() -> None:
    loop = "{% for i in range(100000) %}{% endfor %}ok"
    for _ in range(5):  # 500,000 steps in all, 100,000 per render
        assert render_template(loop, {}) == "ok"


# --- through the CLI: exit code 2, one line, no traceback ----------------------------

# A few of each kind; two in their own process, the rest through `promptgen.cli.main` in
# this one (the same code path minus the interpreter start-up, about a second each).
CLI_CASES = ["ljust", "percent-width", "nested-range-loops", "mro", "print-shared-list"]
CLI_NESTED = ["if-100", "parens-100", "many-tags"]
IN_A_PROCESS = {"ljust", "if-100"}


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    folder = tmp_path_factory.mktemp("hostile")
    cases = {c[0]: c[1] for c in HOSTILE + NESTED if c[0] in CLI_CASES + CLI_NESTED}
    paths = {}
    for name, template in cases.items():
        paths[name] = folder / f"{name}.prompty"
        paths[name].write_text(f"---\nname: {name}\n---\nuser:\n{template}\n", encoding="utf-8")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {n: pool.submit(run_cli, "inspect", str(paths[n])) for n in IN_A_PROCESS}
        results = {n: (paths[n], run.result()) for n, run in runs.items()}
    for name in set(paths) - IN_A_PROCESS:
        results[name] = (paths[name], in_process(["inspect", str(paths[name])]))
    yield results


@pytest.mark.parametrize("name", CLI_CASES + CLI_NESTED)
def test_cli_refuses_with_one_line(name: str, cli_results: dict[str, object]) -> None:
    path, result = cli_results[name]  # type: ignore[misc]
    text = next(c[2] for c in HOSTILE + NESTED if c[0] == name)
    stderr = result.stderr.strip()
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(f"promptgen: error: {path}:5: ")
    assert text in stderr
    assert result.stdout == ""


# Filters that build text or split it into words, sized before they run (the first grew
# to 1.9 GB, the second to 1.05 GB before the refusal).
@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "{{ ('x '*12000000)|title }}",
            "template builds a list of words with title of 24,000,001 items (limit 1,000,000)",
        ),
        (
            "{{ ([[0]*1000000]*1000000)|sort|length }}",
            "template builds a repeated list of 1,000,001,000,000 items (limit 1,000,000)",
        ),
        (
            "{{ ('\U0001f600'*20000000)|urlencode }}",
            "template builds a URL-encoded string of 240,000,000 characters or more "
            "(limit 25,000,000)",
        ),
    ],
)
def test_text_filters_are_sized_before_they_run(template: str, message: str) -> None:
    start = time.monotonic()
    with pytest.raises(TemplateSecurityError) as err:
        render_template(template, {}, engine="jinja2")
    assert str(err.value) == message
    assert time.monotonic() - start < 0.8


def test_sized_filters_within_bounds_give_jinjas_results() -> None:
    values = {"parts": [[0]] * 100_000}
    start = time.monotonic()  # Python's sum copies the total at each step: 8 s here
    assert render_template("{{ (parts|sum(start=[]))|length }}", values, engine="jinja2") == (
        "100000"
    )
    assert time.monotonic() - start < 1.0
    assert render_template("{{ 'ab cd-ef'|title }} {{ 'é'|urlencode }}", {}, engine="jinja2") == (
        "Ab Cd-Ef %C3%A9"
    )
