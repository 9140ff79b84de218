"""The one exception type a user ever sees.

Every mistake a user can make (a missing key file, a corrupt game definition, a tampered
store, a bad pack range) is raised as a :class:`PrintpipeError` whose message is a single
line that says what is wrong and where.  The CLI prints that line and exits non-zero;
anything else escaping is a bug and keeps its traceback.
"""


class PrintpipeError(Exception):
    """A user-facing error: one line, no traceback."""


class InvalidLayout(PrintpipeError):
    """A set of symbols the rules of a game forbid (e.g. six winning symbols)."""
