"""SIGTERM as Ctrl-C: a console script that cleans up when it is interrupted (``KeyboardInterrupt``) cleans up
the same way when it is terminated (``kill``, ``timeout``, a scheduler).

    with sigterm_raises():
        write_outputs()  # a SIGTERM raises Terminated here

``Terminated`` is a ``KeyboardInterrupt``: every ``finally`` and ``except KeyboardInterrupt`` runs for it as for
Ctrl-C. ``stop_status`` names the stop and gives its exit status, 128 + the signal's number.
"""
import contextlib
import signal
import threading
from typing import Iterator, Tuple


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


def _raise_once(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the clean-up this starts is not cut short by another
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block the first SIGTERM raises ``Terminated`` and later ones are
    ignored; the handler before is restored on exit. Outside the main thread, where
    Python cannot install a handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_once)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def stop_status(stop: KeyboardInterrupt) -> Tuple[str, int]:
    """(what stopped the program, its exit status): ``("terminated", 143)`` for
    ``Terminated``, ``("interrupted", 130)`` for Ctrl-C."""
    if isinstance(stop, Terminated):
        return "terminated", 128 + signal.SIGTERM
    return "interrupted", 128 + signal.SIGINT
