"""The one exception type a user ever sees.

Every mistake a user can make (a missing key file, a corrupt game definition, a tampered
store, a bad pack range) is raised as a :class:`PrintpipeError` whose message is a single
line that says what is wrong and where.  The CLI prints that line and exits non-zero;
anything else escaping is a bug and keeps its traceback.
"""

import os


class PrintpipeError(Exception):
    """A user-facing error: one line, no traceback, exit status ``exit_code``."""

    exit_code = 1


class InvalidInput(PrintpipeError):
    """An input refused before anything is looked up or written (a malformed terminal id, pack
    number or reason): exit status 2, like a mistyped command line."""

    exit_code = 2


class InvalidLayout(PrintpipeError):
    """A set of symbols the rules of a game forbid (e.g. six winning symbols)."""


def seconds_from_environment(name: str, default: float, *, most: float = 3600.0) -> float:
    """A wait set in the environment variable ``name`` (seconds, more than 0 and at most
    ``most``), or ``default`` where it is unset or empty; any other value is an
    :class:`InvalidInput` naming the variable, never a traceback."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= most:
        raise InvalidInput(f"{name}={text!r} is not a number of seconds above 0 and up to {most:g}")
    return seconds
