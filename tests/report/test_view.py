"""`promptgen view`: which report it opens ($BROWSER records it), the path printed when
no browser opens, and `--serve`: the index of runs over 127.0.0.1 and their reports."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from promptgen.context import Context, load_context, save_context
from promptgen.report.files import write_reports
from promptgen.report.stats import compliance_rate
from promptgen.report.view import HOST, make_server
from promptgen.results import MetricResult
from tests.report.html_cells import table_rows
from tests.report_data import CHECK, MODEL_A, report_context

REPO = Path(__file__).resolve().parents[2]
TEXT_BROWSERS = ("www-browser", "links", "elinks", "lynx", "w3m")


def with_verdicts(ctx: Context) -> Context:
    """The report context as a real run saves it: every summary backed by a verdict
    (summaries are derived from the verdicts on load)."""
    have = {(r.test_id, r.model, r.run_index, r.metric) for r in ctx.metric_results}
    for run in ctx.test_runs:
        for name, found in run.metrics.items():
            if (*run.key, name) not in have:
                ctx.metric_results.append(
                    MetricResult(
                        test_id=run.test_id, model=run.model, run_index=run.run_index,
                        metric=name, judge=None if name == CHECK else "judge-z",
                        score=found.score, outcome=None if found.score is None else found.outcome,
                        error="judge failed" if found.score is None else None,
                    )
                )  # fmt: skip
    return ctx


def write_run(folder: Path, name: str, *, only_model_a: bool = False, at: int) -> Path:
    """A run folder (context.json and reports) saved at time `at`."""
    ctx = with_verdicts(report_context())
    ctx.prompt.name = name
    if only_model_a:
        ctx.test_runs = [r for r in ctx.test_runs if r.model == MODEL_A]
    save_context(ctx, folder / "context.json")
    loaded = load_context(folder / "context.json")
    assert compliance_rate(loaded.test_runs) == compliance_rate(ctx.test_runs)
    write_reports(ctx, folder)
    for path in folder.iterdir():
        os.utime(path, (at, at))
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """promptgen-out/ with two runs (the nested one newer) and a damaged one."""
    out = tmp_path / "promptgen-out"
    write_run(out / "greeter", "greeter", at=1_700_000_000)
    write_run(out / "lve" / "second", "second <b>", only_model_a=True, at=1_700_000_100)
    broken = out / "broken"
    broken.mkdir(parents=True)
    (broken / "context.json").write_text("{not json", encoding="utf-8")
    os.utime(broken / "context.json", (1_600_000_000, 1_600_000_000))
    write_run(tmp_path / "outside", "outside", at=1_600_000_000)  # a run not under the root
    return out


def browser_recorder(tmp_path: Path) -> tuple[dict[str, str], Path]:
    record = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> "{record}"\n', encoding="utf-8")
    script.chmod(0o755)
    return environment(BROWSER=str(script)), record


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = str(REPO)
    return {**env, **extra}


def view(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "promptgen", "view", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120,
    )  # fmt: skip


def test_view_opens_the_newest_run_or_the_one_given(tmp_path: Path, runs: Path) -> None:
    env, record = browser_recorder(tmp_path)
    newest = (runs / "lve" / "second" / "report.html").resolve().as_uri()
    greeter = (runs / "greeter" / "report.html").resolve().as_uri()
    result = view(tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert record.read_text().splitlines() == [newest]
    assert result.stdout == ""
    assert "promptgen: opened promptgen-out/lve/second/report.html" in result.stderr
    for target in ("promptgen-out/greeter", "promptgen-out/greeter/context.json"):
        assert view(tmp_path, env, target).returncode == 0
    assert view(tmp_path, env, "promptgen-out/lve").returncode == 0  # its newest run
    assert record.read_text().splitlines() == [newest, greeter, greeter, newest]


def test_view_prints_the_path_when_no_browser_opens(tmp_path: Path, runs: Path) -> None:
    result = view(tmp_path, environment(), "--no-browser", "promptgen-out/greeter")
    assert (result.returncode, result.stdout) == (0, "promptgen-out/greeter/report.html\n")
    if any(shutil.which(b) for b in TEXT_BROWSERS):
        pytest.skip("a text-mode browser is installed: a failing $BROWSER would fall back to it")
    failing = tmp_path / "fails.sh"
    failing.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    failing.chmod(0o755)
    result = view(tmp_path, environment(BROWSER=str(failing)), "promptgen-out/greeter")
    assert (result.returncode, result.stdout) == (0, "promptgen-out/greeter/report.html\n")


def test_view_explains_what_is_missing(tmp_path: Path) -> None:
    env = environment()
    result = view(tmp_path, env)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "promptgen: error: no run with a report.html under promptgen-out/ "
        "(run `promptgen FILE` first, or give a run folder)"
    )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "context.json").write_text("{}", encoding="utf-8")
    result = view(tmp_path, env, "run")
    assert result.returncode == 2
    assert "run: no report.html yet (run `promptgen run/context.json`" in result.stderr
    assert view(tmp_path, env, "nowhere").returncode == 2


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


def check_index(url: str, runs: Path) -> None:
    status, body = fetch(url)
    assert status == 200
    page = body.decode()
    rows = table_rows(page, "runs")
    # Prompt (and folder), saved, models, tests, compliance, per model, report; newest first.
    assert [(r[0], r[2], r[3], r[4], r[5], r[6]) for r in rows] == [
        ("second <b> lve/second", "model-a", "5 tests, 4 run, 1 invalid (1 of them run), "
         "1 valid not run", "50.0%", "model-a: 50.0%", "report"),
        ("greeter greeter", "model-a, model-b", "5 tests, 5 run, 1 invalid (1 of them run)",
         "62.5%", "model-a: 50.0% model-b: 75.0%", "report"),
        (rows[2][0], "-", "-", "-", "-", "no report yet"),
    ]  # fmt: skip
    assert rows[2][0].startswith("broken ") and "context.json:1: not valid JSON" in rows[2][0]
    assert "second &lt;b&gt;" in page and "<b>" not in page
    links = re.findall(r'<a href="([^"]+)">report</a>', page)
    assert links == ["lve/second/report.html", "greeter/report.html"]
    status, served = fetch(url + links[1])
    assert (status, served) == (200, (runs / "greeter" / "report.html").read_bytes())
    # Nothing but the report files of the runs under the root.
    hidden = (
        "greeter/context.json",
        "greeter/",
        "../outside/report.html",
        "%2e%2e/outside/report.html",
    )
    for path in hidden:
        assert fetch(url + path)[0] == 404, path


def test_serve_in_a_thread(runs: Path) -> None:
    server = make_server(runs, 0)
    assert server.server_address[0] == HOST
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        check_index(f"http://{HOST}:{server.server_address[1]}/", runs)
    finally:
        server.shutdown()
        server.server_close()


def _sigint_as_at_a_terminal() -> None:
    """Started in the background of a script (as CI harnesses run the suite), the child
    inherits SIGINT ignored and Python installs no KeyboardInterrupt handler: restore
    the terminal's default so the Ctrl-C this test sends arrives."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_serve_command_prints_the_url_and_stops_on_ctrl_c(tmp_path: Path, runs: Path) -> None:
    env, record = browser_recorder(tmp_path)
    env["PYTHONFAULTHANDLER"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-m", "promptgen", "view", "--serve", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
        check_index(url, runs)
        deadline = time.monotonic() + 30  # Ctrl-C once the browser was sent, as a user would
        while not (record.exists() and record.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack
            _, stuck = process.communicate(timeout=30)
            pytest.fail(f"still serving 30 s after Ctrl-C:\n{stuck}")
        assert code == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert record.read_text().splitlines() == [url]  # the browser was sent to the index
    assert "(Ctrl-C stops)" in (process.stderr.read() if process.stderr else "")
