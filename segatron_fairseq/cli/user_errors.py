"""How a console script answers a user's mistake: one line on stderr that
names the file or option and the problem, a non-zero exit, no traceback.

    with exit_on_user_error("segatron-plot"):
        main(args)

``OSError`` (missing file, directory, permissions) and ``ValueError``
(``UnicodeDecodeError`` included) are the user's: the code that raises them
puts the file in the message. Anything else is a bug and keeps its traceback.
"""
import argparse
import contextlib
import sys
from typing import Iterator

USER_ERRORS = (OSError, ValueError)


@contextlib.contextmanager
def exit_on_user_error(prog: str) -> Iterator[None]:
    """End the program with ``prog: error: MESSAGE`` (exit status 1) on a user error."""
    try:
        yield
    except USER_ERRORS as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        raise SystemExit(1) from None


def positive_int(text: str) -> int:
    """argparse ``type`` of a count that must be at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
