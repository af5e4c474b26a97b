"""How a console script answers a user's mistake: one line on stderr that
names the file or option and the problem, a non-zero exit, no traceback.

    with exit_on_user_error("segatron-plot"):
        check_output(args.out + ".png", inputs={"--text": args.text}, overwrite=args.overwrite)
        main(args)

``OSError`` (missing file, directory, permissions) and ``ValueError``
(``UnicodeDecodeError`` included) are the user's: the code that raises them
puts the file in the message. Anything else is a bug and keeps its traceback.
Ctrl-C and SIGTERM end the program with one line too (exit status 130, 143),
after the same clean-up (``segatron_preprocess.termination``).
"""
import argparse
import math
import os
from typing import Mapping, Optional

from segatron_preprocess.atomic import unreplaceable_kind
from segatron_preprocess.inputs import same_file
from segatron_preprocess.termination import exit_on_user_error  # noqa: F401  (the console scripts' handler)


def check_output(path: str, *, option: str = "--out", inputs: Mapping[str, Optional[str]] = (),
                 overwrite: bool = False, directory: bool = False) -> None:
    """Refuse (``ValueError``: ``PATH: problem``), before any work, an output
    ``path`` whose writing would lose a user's file or fail: the same file as
    one of ``inputs`` (what the user calls it -> its path; ``None`` skipped),
    an existing file without ``overwrite``, a file where a directory is meant
    (``directory``) or a directory where a file is, a device, FIFO or socket
    (even with ``overwrite``), and a place whose nearest existing directory is
    not writable. An existing ``directory`` is allowed:
    its contents are the caller's to check."""
    for name, given in dict(inputs).items():
        if given is not None and same_file(path, given):
            raise ValueError(f"{path}: {option} is the same file as {name}; name another "
                             + ("directory" if directory else "file"))
    if directory:
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ValueError(f"{path}: {option} exists and is not a directory")
    elif os.path.isdir(path):
        raise ValueError(f"{path}: {option} is a directory; name a file")
    elif (kind := unreplaceable_kind(path)) is not None:
        raise ValueError(f"{path}: {option} is {kind}, which is never replaced; name a file")
    elif os.path.lexists(path) and not overwrite:
        raise ValueError(f"{path}: {option} exists; pass --overwrite to replace it, or name another file")
    place = path if directory and os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(place):
        place = os.path.dirname(place)
    if not os.path.isdir(place):
        raise ValueError(f"{path}: {option} is inside {place}, which is not a directory")
    if not os.access(place, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: {option} cannot be written ({place} is not writable)")


def positive_int(text: str) -> int:
    """argparse ``type`` of a count that must be at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def finite_float(text: str) -> float:
    """argparse ``type`` of a number that must be finite (not nan or inf)."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value
