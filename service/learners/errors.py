"""Errors the learners raise. Both are ``ValueError`` so callers may catch either."""

from __future__ import annotations


class InvalidParameter(ValueError):
    """A hyper-parameter given to :func:`service.learners.create` is not acceptable."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter
        self.problem = problem


class InvalidInput(ValueError):
    """An example (``x``) or label (``y``) cannot be scored or learned from."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
