"""Weight files are joined once and never loaded unless size and SHA-256 match."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from promptgen.llm.types import ModelConfigError
from promptgen.llm.weights import SPECS, LocalModelSpec, assemble, verify


def _spec(data: bytes, **changes: object) -> LocalModelSpec:
    base = replace(
        SPECS["qwen2.5-coder-0.5b"],
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        filename="tiny.gguf",
        module_prefix="promptgen_test_missing_part",
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_verify_accepts_the_right_file_and_stamps_it(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"weights" * 100)
    spec = _spec(path.read_bytes())
    verify(path, spec)
    assert (tmp_path / "tiny.gguf.verified").is_file()
    verify(path, spec)  # the stamp short-cuts re-hashing


def test_size_mismatch_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"abc")
    with pytest.raises(ModelConfigError, match="expected"):
        verify(path, _spec(b"abcd"))


def test_hash_mismatch_is_an_error_even_after_a_stamp(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"good")
    spec = _spec(b"good")
    verify(path, spec)
    path.write_bytes(b"evil")  # same size, new mtime: the stamp no longer applies
    with pytest.raises(ModelConfigError, match="SHA-256"):
        verify(path, spec)


def test_missing_parts_say_how_to_install(tmp_path: Path) -> None:
    with pytest.raises(
        ModelConfigError, match=r"pip install -e \"\.\[local\]\" in the promptgen checkout"
    ):
        assemble(_spec(b"x"), folder=tmp_path)


def test_specs_match_the_published_files() -> None:
    big, small = SPECS["qwen2.5-coder-1.5b"], SPECS["qwen2.5-coder-0.5b"]
    assert (big.parts, big.size, big.version) == (22, 1_117_320_768, "0.2.0")
    assert big.sha256.startswith("cc324af070c2")
    assert (small.parts, small.size, small.version) == (6, 491_400_064, "0.9.0")
    assert small.sha256.startswith("1d9614638d18")


class _FakeLlamaCpp:
    def __init__(self, info: str) -> None:
        self.info = info

    def llama_print_system_info(self) -> bytes:
        return self.info.encode()


@pytest.mark.parametrize(
    ("info", "forced", "skip"),
    [
        ("CPU : AVX2 = 1 | AMX_INT8 = 1 |", None, True),
        ("CPU : AVX2 = 1 | REPACK = 1 |", None, False),
        ("CPU : AMX_INT8 = 1 |", "1", False),
        ("CPU : AVX2 = 1 |", "0", True),
    ],
)
def test_extra_buffers_are_skipped_on_amx_builds(
    monkeypatch: pytest.MonkeyPatch, info: str, forced: str | None, skip: bool
) -> None:
    from promptgen.llm.local import _skip_extra_buffers

    if forced is None:
        monkeypatch.delenv("PROMPTGEN_LLAMA_EXTRA_BUFFERS", raising=False)
    else:
        monkeypatch.setenv("PROMPTGEN_LLAMA_EXTRA_BUFFERS", forced)
    assert _skip_extra_buffers(_FakeLlamaCpp(info)) is skip
