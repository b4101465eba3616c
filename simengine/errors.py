"""Errors the engine raises for bad input.

Every error names *where* the problem is (a field path in a scenario, or a file,
line and field in a trace) and *why*, so the CLI, the API and the web form can
show it next to the thing the user has to fix.
"""
from __future__ import annotations

from dataclasses import dataclass


class SimEngineError(Exception):
    """Base class of every error the engine raises on purpose."""


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: ``path`` is dotted (``platform.clusters.0.processors``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ScenarioError(SimEngineError):
    """A scenario (or CLI option) is invalid; ``errors`` lists every problem found."""

    def __init__(self, errors: list[FieldError] | FieldError | str, source: str | None = None):
        if isinstance(errors, str):
            errors = [FieldError("", errors)]
        elif isinstance(errors, FieldError):
            errors = [errors]
        self.errors: list[FieldError] = list(errors)
        self.source = source
        head = f"{source}: " if source else ""
        super().__init__(head + "; ".join(str(e) for e in self.errors))


class TraceError(SimEngineError):
    """A workload trace file is malformed at a given line and field."""

    def __init__(self, file: str, line: int | None, field: str | None, reason: str):
        self.file, self.line, self.field, self.reason = file, line, field, reason
        where = file
        if line is not None:
            where += f", line {line}"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {reason}")
