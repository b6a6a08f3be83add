"""The limit and ratio of bench/local.py, on a hand-made context (no model)."""

from __future__ import annotations

from bench.local import Rates, limit, report, stage_rows

CONTEXT = {
    "usage": {
        "total": {
            "prompt_tokens": 9000,
            "completion_tokens": 700,
            "cached_tokens": 3000,
            "calls": 14,
            "latency_ms": 260000.0,
        },
        "by_stage": {
            "rules": {
                "prompt_tokens": 4000,
                "completion_tokens": 300,
                "cached_tokens": 1000,
                "calls": 4,
                "latency_ms": 120000.0,
            },
            "run_models": {
                "prompt_tokens": 5000,
                "completion_tokens": 400,
                "cached_tokens": 2000,
                "calls": 10,
                "latency_ms": 140000.0,
            },
        },
        "by_model": {
            "local/qwen2.5-coder-1.5b": {
                "prompt_tokens": 4000,
                "completion_tokens": 300,
                "cached_tokens": 1000,
                "calls": 4,
            },
            "local/qwen2.5-coder-0.5b": {
                "prompt_tokens": 5000,
                "completion_tokens": 400,
                "cached_tokens": 2000,
                "calls": 10,
            },
            "openai/gpt-4o-mini": {"prompt_tokens": 100, "completion_tokens": 10, "calls": 1},
        },
    }
}
RATES = {
    "qwen2.5-coder-1.5b": Rates(100.0, 10.0, threads=2, prefill_one=55.0, decode_one=7.0),
    "qwen2.5-coder-0.5b": Rates(prefill=300.0, decode=40.0),
}


def test_the_limit_is_the_tokens_read_and_written_at_each_models_rates() -> None:
    # 1.5B: 3000 read / 100 + 300 / 10 = 60 s; 0.5B: 3000 / 300 + 400 / 40 = 20 s;
    # the remote model has no rates and is left out
    assert limit(CONTEXT, RATES) == 80.0


def test_the_report_ends_with_the_ratio_of_wall_to_limit() -> None:
    text = report("readme", 200.0, CONTEXT, RATES)
    lines = text.splitlines()
    assert lines[-2:] == ["wall 200 s, limit 80 s", "ratio 2.50"]
    assert "| rules | 4 | 4000 | 1000 | 25 | 300 | 120 |" in lines
    assert "| run_models | 10 | 5000 | 2000 | 40 | 400 | 140 |" in lines
    assert "| **all** | 14 | 9000 | 3000 | 33 | 700 | 260 |" in lines
    assert "| local/qwen2.5-coder-0.5b | 300.0 | 40.0 | 3000 | 400 | 20 |" in lines
    assert "| local/qwen2.5-coder-1.5b | 100.0 | 10.0 | 3000 | 300 | 60 |" in lines
    assert not [line for line in lines if "gpt-4o-mini" in line]
    # what the cores add, for the model calibrated at one thread too
    assert (
        "threads: local/qwen2.5-coder-1.5b at 2 (physical cores) reads 1.82x and writes "
        "1.43x as fast as at 1 (55.0 and 7.0 tok/s)"
    ) in lines
    assert not [line for line in lines if line.startswith("threads: local/qwen2.5-coder-0.5b")]


def test_stages_keep_the_order_the_run_recorded() -> None:
    assert [(r.name, r.read) for r in stage_rows(CONTEXT)] == [
        ("rules", 3000),
        ("run_models", 3000),
    ]


def test_a_run_without_embedded_calls_has_no_ratio() -> None:
    assert report("remote", 5.0, {"usage": {}}, RATES).splitlines()[-1] == "ratio -"
