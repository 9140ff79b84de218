"""The one exception type a user ever sees.

Every mistake a user can make (a missing key file, a corrupt game definition, a tampered
store, a bad pack range) is raised as a :class:`PrintpipeError` whose message is a single
line that says what is wrong and where.  The CLI prints that line and exits non-zero;
anything else escaping is a bug and keeps its traceback.
"""


class PrintpipeError(Exception):
    """A user-facing error: one line, no traceback, exit status ``exit_code``."""

    exit_code = 1


class InvalidInput(PrintpipeError):
    """An input refused before anything is looked up or written (a malformed terminal id, pack
    number or reason): exit status 2, like a mistyped command line."""

    exit_code = 2


class InvalidLayout(PrintpipeError):
    """A set of symbols the rules of a game forbid (e.g. six winning symbols)."""
