"""Progress bars on stderr for long runs: count, rate and time left (tqdm); only on a terminal.

A bar is a line redrawn in place with carriage returns: in a log file, a pipe or a CI job's
output it is noise (one line per redraw), so where stderr is not a terminal there is none, as
if ``--quiet`` were given."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm

SHOW_AFTER_S = 0.5
"""A bar appears only once its run has lasted this long: quick runs and refusals stay quiet."""


def on_a_terminal() -> bool:
    """Whether stderr, where the bars go, is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without one, or closed
        return False


@contextmanager
def progress_bar(
    total: int, label: str, unit: str, enabled: bool = True, nested: bool = False
) -> Iterator[tqdm]:
    """A bar on stderr with rate and time left, so stdout stays for results; none unless
    ``enabled`` and stderr is a terminal.

    A ``nested`` bar (a step inside another bar's run) shows below it and is cleared when done;
    a bar whose run fails is cleared too, so that the error line stands alone.
    """
    bar = tqdm(
        position=1 if nested else None,
        leave=not nested,
        total=total,
        desc=label,
        unit=f" {unit}",
        unit_scale=True,
        file=sys.stderr,
        disable=not (enabled and on_a_terminal()),
        dynamic_ncols=True,
        smoothing=0.1,
        mininterval=0.5,
        delay=SHOW_AFTER_S,
    )
    try:
        yield bar
    except BaseException:
        bar.leave = False
        raise
    finally:
        bar.close()
