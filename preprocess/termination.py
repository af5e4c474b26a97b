"""SIGTERM as Ctrl-C: a console script that cleans up when it is interrupted (``KeyboardInterrupt``) cleans up
the same way when it is terminated (``kill``, ``timeout``, a scheduler).

    with sigterm_raises():
        write_outputs()  # a SIGTERM raises Terminated here

``Terminated`` is a ``KeyboardInterrupt``: every ``finally`` and ``except KeyboardInterrupt`` runs for it as for
Ctrl-C. ``stop_status`` names the stop and gives its exit status, 128 + the signal's number;
``exit_on_user_error`` ends a console script on a stop or a user's mistake with one line.
"""
import contextlib
import signal
import sys
import threading
from typing import Iterator, Tuple, Type

USER_ERRORS = (OSError, ValueError)


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


def user_error_message(err: BaseException) -> str:
    """``err`` as ``FILE: problem``: an ``OSError`` of the system (``[Errno 1] ...``)
    names its file (the destination of a rename) and its reason; others are their own text."""
    if isinstance(err, OSError) and err.strerror and (err.filename2 or err.filename):
        return f"{err.filename2 or err.filename}: {err.strerror}"
    return str(err)


@contextlib.contextmanager
def exit_on_user_error(prog: str, errors: Tuple[Type[BaseException], ...] = ()) -> Iterator[None]:
    """End the program with ``prog: error: MESSAGE`` (exit status 1) on a user
    error (``USER_ERRORS`` and ``errors``), with ``prog: interrupted`` (exit
    status 130) on Ctrl-C and with ``prog: terminated`` (143) on SIGTERM, which
    inside the block raises ``KeyboardInterrupt``'s subclass ``Terminated``."""
    try:
        with sigterm_raises():
            yield
    except (*USER_ERRORS, *errors) as err:
        print(f"{prog}: error: {user_error_message(err)}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt as stop:
        word, status = stop_status(stop)
        print(f"{prog}: {word}", file=sys.stderr)
        raise SystemExit(status) from None
