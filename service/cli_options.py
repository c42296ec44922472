"""What every ``acog`` command shares: option types that refuse nonsense at parse time, the help
formatter that shows defaults, :class:`UsageError`, the one-line error a user can cause, and
:class:`Command`, what a package outside the product registers to add a command.

A value refused by one of these types makes :class:`Parser` print one ``error:`` line and exit with
code 2, before any work starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn


class UsageError(Exception):
    """Something the user asked for cannot be done (a missing data set, an unknown algorithm, a bad
    setting, an unreachable Redis): ``acog`` prints the message as one line and exits with code 2."""


@dataclass(frozen=True)
class Command:
    """A command of ``acog`` that another package provides: the object an entry point of the
    ``acog.commands`` group names (its name is the command's). The research package registers
    ``evaluate`` this way, so that the product never imports it."""

    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a refused option is one line (``acog evaluate: error: argument
    --permutations: must be at least 1, got 0 (see acog evaluate --help)``) and exit code 2, without
    the usage text before it. Sub-commands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's defaults in ``--help`` (``(default: 20)``), except where the help text already
    names its default or there is none to show (``None``, an unset flag)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return action.help
        return super()._get_help_string(action)


def _number(text: str, kind: Callable[[str], float]) -> float:
    try:
        value = kind(text)
    except ValueError:
        noun = "a whole number" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """The type of a whole number >= ``minimum``."""

    def parse(text: str) -> int:
        value = int(_number(text, int))
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"  # what argparse names in an error
    return parse


positive_int = int_at_least(1)
"""A whole number >= 1 (a count: permutations, repeats, workers, examples)."""


def non_negative_int(text: str) -> int:
    """A whole number >= 0 (a seed)."""
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port)."""
    value = int(_number(text, int))
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a rate, a regulariser)."""
    value = _number(text, float)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (a delay, a timeout)."""
    value = _number(text, float)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def open_fraction(text: str) -> float:
    """A number strictly between 0 and 1 (a weight whose complement is the other class's)."""
    value = _number(text, float)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1] (a share)."""
    value = _number(text, float)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be greater than 0 and at most 1, got {text}")
    return value


def service_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (and a valid port, if one is given)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError on a port out of range or not a number)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL with a host")
    return text
