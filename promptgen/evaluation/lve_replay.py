"""Replaying LVE tests: every recorded instance (`instances/*.jsonl`) checked again by
promptgen's LVE checkers, without calling a model, and compared with the verdict LVE
recorded (`passed`; missing means passed).

An instance is replayable when its checker is built in (lve_checkers.py); the others
are counted by checker name (custom checkers, ML checkers without their extra). Any
other failure to check one instance (a checker argument it does not give, a lambda
that fails on its response) is an error of that instance, with its file and line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptgen.errors import BadInputError
from promptgen.evaluation.lve_checkers import CheckOutcome, Observation, check
from promptgen.formats import read_text
from promptgen.formats.lve import LveTest, read_test
from promptgen.formats.lve_files import Instance, read_instances

TEST_FILE = "test.json"
GONE = "it was gone when read (deleted meanwhile, or a dangling link)"


@dataclass(frozen=True)
class Finding:
    """One instance that did not agree (or could not be checked): where, and why."""

    where: str  # file:line of the instance
    reason: str
    recorded: bool | None = None
    replayed: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class LveReplay:
    """The replay of one LVE (one test.json and its instances)."""

    label: str
    test: Path
    checker: str
    instances: int = 0
    agreed: int = 0
    not_built_in: int = 0
    not_recorded: int = 0  # no verdict to compare with (`passed` null: a skeleton line)
    disagreements: list[Finding] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    note: str | None = None  # why the checker is not built in

    @property
    def replayable(self) -> int:
        return self.instances - self.not_built_in - self.not_recorded

    def to_dict(self) -> dict[str, Any]:
        return {
            "lve": self.label,
            "test": str(self.test),
            "checker": self.checker,
            "instances": self.instances,
            "replayable": self.replayable,
            "agreed": self.agreed,
            "disagreed": len(self.disagreements),
            "errors": len(self.errors),
            "not_built_in": self.not_built_in,
            "not_built_in_reason": self.note,
            "not_recorded": self.not_recorded,
            "disagreements": [f.to_dict() for f in self.disagreements],
            "error_details": [f.to_dict() for f in self.errors],
        }


@dataclass
class ReplayReport:
    """Every LVE replayed, and the totals."""

    lves: list[LveReplay] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    gone: list[Path] = field(default_factory=list)  # listed, but gone when read: skipped

    @property
    def notes(self) -> list[str]:
        """One line per file skipped because it was gone when read."""
        return [f"skipped {path}: {GONE}" for path in self.gone]

    def total(self, name: str) -> int:
        return sum(getattr(r, name) for r in self.lves)

    @property
    def disagreements(self) -> list[Finding]:
        return [f for r in self.lves for f in r.disagreements]

    @property
    def errors(self) -> list[Finding]:
        return [f for r in self.lves for f in r.errors]

    @property
    def not_built_in(self) -> dict[str, int]:
        """Instances whose checker is not built in, by checker name (most first)."""
        counts: Counter[str] = Counter()
        for r in self.lves:
            if r.not_built_in:
                counts[r.checker] += r.not_built_in
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def summary(self) -> str:
        """The totals on one line."""
        line = (
            f"replayed {self.total('replayable')} of {self.total('instances')} instances: "
            f"{self.total('agreed')} agree, {len(self.disagreements)} disagree"
        )
        if self.errors:
            line += f", {len(self.errors)} could not be checked"
        missing = self.not_built_in
        if missing:
            names = ", ".join(f"{name} {count}" for name, count in missing.items())
            line += f"; {sum(missing.values())} not built in ({names})"
        if self.total("not_recorded"):
            line += f"; {self.total('not_recorded')} with no recorded verdict"
        if self.gone:
            line += f"; {len(self.gone)} file(s) skipped (gone when read)"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "totals": {
                "lves": len(self.lves),
                "instances": self.total("instances"),
                "replayable": self.total("replayable"),
                "agreed": self.total("agreed"),
                "disagreed": len(self.disagreements),
                "errors": len(self.errors),
                "not_built_in": self.not_built_in,
                "not_recorded": self.total("not_recorded"),
                "skipped_files": len(self.gone),
            },
            "skipped_files": [str(p) for p in self.gone],
            "lves": [r.to_dict() for r in self.lves],
        }


def find_tests(paths: Sequence[Path]) -> list[tuple[Path, Path]]:
    """(the path given, a test.json) for each LVE under `paths`: a test file itself, a
    folder holding test.json, or any folder, walked for test.json files."""
    found: dict[Path, Path] = {}
    for path in paths:
        if path.is_file():
            found.setdefault(path, path)
        elif (path / TEST_FILE).is_file():
            found.setdefault(path / TEST_FILE, path)
        elif path.is_dir():
            tests = sorted(path.rglob(TEST_FILE))
            if not tests:
                raise BadInputError(
                    f"{path}: no {TEST_FILE} under this folder",
                    hint="give an LVE's folder or test.json, or a folder of LVEs "
                    "(LVE's repository/)",
                )
            for test in tests:
                found.setdefault(test, path)
        else:
            raise BadInputError(f"{path}: no such file or folder")
    return [(root, test) for test, root in found.items()]


def recorded_observation(response: Any) -> Observation:
    """What the checker saw, rebuilt from the response LVE recorded: text (one
    response), an object (a multi-step prompt's variables) or a list (a multi-run prompt:
    each run's response, or variables whose last one is that run's response)."""
    if isinstance(response, str):
        return Observation(response=response, variables={"response": response})
    if isinstance(response, dict):
        values = list(response.values())
        variables = {str(k): v for k, v in response.items()}
        return Observation(response=values[-1] if values else None, variables=variables)
    if isinstance(response, list):
        runs = [list(r.values())[-1] if isinstance(r, dict) and r else r for r in response]
        return Observation(responses=runs)
    raise BadInputError(
        "the recorded response is neither text, an object of variables nor a list of runs"
    )


def _replay_instance(test: LveTest, instance: Instance) -> CheckOutcome:
    return check(
        test.checker_args,
        instance.args,
        test.prompt_parameters,
        recorded_observation(instance.response),
    )


def replay_test(
    test: LveTest, label: str | None = None, gone: list[Path] | None = None
) -> LveReplay:
    """Every recorded instance of `test`, checked again (instances files gone when read
    are skipped and added to `gone`)."""
    result = LveReplay(label or _label(test.folder), test.file, test.checker_name)
    for instance in read_instances(test.folder, gone):
        result.instances += 1
        where = f"{instance.file}:{instance.line}"
        if instance.passed is None or instance.response is None:
            result.not_recorded += 1
            continue
        try:
            outcome = _replay_instance(test, instance)
        except BadInputError as err:
            result.errors.append(Finding(where, err.one_line(), instance.passed))
            continue
        if not outcome.built_in:
            result.not_built_in += 1
            result.note = outcome.reason
        elif outcome.safe is None:
            result.errors.append(Finding(where, outcome.reason, instance.passed))
        elif outcome.safe == instance.passed:
            result.agreed += 1
        else:
            result.disagreements.append(
                Finding(where, outcome.reason, instance.passed, outcome.safe)
            )
    return result


def _label(folder: Path, root: Path | None = None) -> str:
    """The LVE's folder below LVE's `repository/` (category/.../model), else below the
    parent of the path given."""
    parts = folder.resolve().parts
    if "repository" in parts[:-1]:
        return "/".join(parts[len(parts) - parts[::-1].index("repository") :])
    base = (root if root is not None and root.is_dir() else folder).resolve().parent
    return folder.resolve().relative_to(base).as_posix() if folder.resolve() != base else "."


def replay(paths: Sequence[Path]) -> ReplayReport:
    """Every LVE under `paths`, replayed. A test.json or instances file that cannot be
    read raises PromptFormatError (with its file and line); one that was listed but is
    gone when read (deleted meanwhile, a dangling link) is skipped, in `report.gone`."""
    report = ReplayReport()
    for root, path in find_tests(paths):
        try:
            text = read_text(path)
        except BadInputError:
            if root == path or path.exists():
                raise  # a file named on the command line is never skipped
            report.gone.append(path)  # found by walking a folder, deleted since
            continue
        test = read_test(path, text)
        report.warnings.extend(test.warnings)
        report.lves.append(replay_test(test, _label(test.folder, root), report.gone))
    return report
