"""Errors the learners raise.

:class:`InvalidParameter` and :class:`InvalidInput` are ``ValueError`` (bad configuration or
bad data: the caller's to report); :class:`StateBorrowed` is a ``RuntimeError`` (a bug in the
code that holds the learner)."""

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


class StateBorrowed(RuntimeError):
    """A learner was asked to change its state while :meth:`borrowed_state` lends it out.

    A programming error, never the client's: the holder of the borrow must finish first."""
