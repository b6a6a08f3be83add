"""promptgen.toml and .env written by configure: round trips and merges."""

from __future__ import annotations

import datetime
import tomllib
from pathlib import Path

import pytest

from promptgen.configure.envfile import ignore_env, mask, quote, read_env, update_env
from promptgen.configure.tomlfile import dumps, merge, read_toml
from promptgen.errors import BadInputError

TRICKY = {
    "api_base": "http://127.0.0.1:8080/v1",
    "concurrency": 8,
    "ratio": 0.25,
    "on": True,
    "when": datetime.date(2024, 5, 1),
    "odd key": 'quote " backslash \\ tab \t newline \n bell \x07 ü',
    "models": {"rules": "openai/gpt-4o-mini", "under_test": ["a", "b;c"], "empty": []},
    "nested": {"deeper": {"x": 1}, "inline": [{"a": {"b": 1}}]},
    "runs": [{"name": "one", "n": 1}, {"name": "two", "n": 2}],
    "empty_table": {},
}


def test_dumps_round_trips() -> None:
    assert tomllib.loads(dumps(TRICKY)) == TRICKY


def test_root_keys_come_before_tables() -> None:
    text = dumps({"models": {"rules": "m"}, "api_base": "http://h/v1"})
    assert text == 'api_base = "http://h/v1"\n\n[models]\nrules = "m"\n'


def test_merge_keeps_other_keys_and_removes_none() -> None:
    base = {"api_base": "x", "models": {"baseline": "b", "rules": "old"}, "other": {"k": 1}}
    merged = merge(base, {"api_base": None, "models": {"rules": "new"}})
    assert merged == {"models": {"baseline": "b", "rules": "new"}, "other": {"k": 1}}
    assert base["models"]["rules"] == "old"  # not changed in place


def test_bad_toml_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "promptgen.toml"
    path.write_text("a = 1\nb = = 2\n")
    with pytest.raises(BadInputError) as err:
        read_toml(path)
    assert err.value.line == 2 and "invalid TOML" in err.value.one_line()


@pytest.mark.parametrize("value", ["sk-abc", "with space", "it's", 'a"b\\c', "$HOME", "#x"])
def test_env_values_read_back_unchanged(tmp_path: Path, value: str) -> None:
    path = tmp_path / ".env"
    update_env(path, {"K": value})
    assert read_env(path) == {"K": value}
    assert quote(value) in path.read_text()


def test_env_refuses_what_dotenv_would_expand(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        update_env(tmp_path / ".env", {"K": "a${B}"})


def test_env_update_replaces_in_place_once(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("# c\nexport A=1\nB=2\nA=3\n")
    assert update_env(path, {"A": "new", "C": "c"}) == ["A", "C"]
    assert path.read_text() == "# c\nA='new'\nB=2\nC='c'\n"
    assert update_env(path, {"A": "new"}) == []  # nothing to change: file untouched


def test_gitignore_patterns_already_ignoring(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: elsewhere")  # a worktree's .git is a file
    (tmp_path / ".gitignore").write_text("node_modules\n/.env\n")
    assert ignore_env(tmp_path) is None
    (tmp_path / ".gitignore").write_text("")
    assert ignore_env(tmp_path) == tmp_path / ".gitignore"
    assert (tmp_path / ".gitignore").read_text() == ".env\n"


def test_mask_never_shows_a_whole_key() -> None:
    assert mask("sk-proj-abcdefghijkl") == "sk-...ijkl"
    assert mask("short") == "****"
