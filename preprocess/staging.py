"""Where a run writes before it commits, and what stops it.

Everything a run produces (a trained Punkt or sentencepiece model, the
dictionary, every split) is written to a staging directory inside the
destination, ``.segatron-preprocess-HOST-PID-RANDOM``, and moved into place
only when the whole run has succeeded (``output.commit``). A refused or failed
run removes its staging directory and leaves the destination as it was.

SIGTERM and SIGINT raise ``Interrupted`` in the main process, so the same
clean-up runs; the pool's workers die with their parent (Linux
``PR_SET_PDEATHSIG``). After a SIGKILL the staging directory stays behind; the
next run into the destination removes it when it can prove it abandoned: made
on this host by a process that no longer exists.
"""
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import tempfile
from typing import Iterator

logger = logging.getLogger("segatron_preprocess")

PREFIX = ".segatron-preprocess-"
_PR_SET_PDEATHSIG = 1


class Interrupted(Exception):
    """The run received SIGTERM or SIGINT."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT raise ``Interrupted`` inside the block."""
    previous = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """SIGTERM and SIGINT do not stop the block (the commit): one that arrives
    meanwhile is noted, and dropped with a warning once the run has finished.
    (Python runs signal handlers in the main thread, whichever thread the
    signal reached, so swapping the handler covers every thread.)"""
    received = []
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in received:
            logger.warning(f"{signal.Signals(signum).name} arrived while the run was being committed; the "
                           f"commit was finished first")


def worker_process_setup() -> None:
    """In a pool worker: die with the parent, leave SIGINT to the parent, and
    let SIGTERM (the pool's terminate) end the process at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: workers may outlive a killed parent
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned(destdir: str) -> None:
    """Remove staging directories of runs on this host whose process is gone."""
    if not os.path.isdir(destdir):
        return
    host = socket.gethostname()
    for name in os.listdir(destdir):
        if not name.startswith(PREFIX):
            continue
        parts = name[len(PREFIX):].rsplit("-", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        if not _process_alive(int(parts[1])):
            shutil.rmtree(os.path.join(destdir, name), ignore_errors=True)
            logger.info(f"removed {os.path.join(destdir, name)}, left by process {parts[1]}, which no longer runs")


@contextlib.contextmanager
def staging_directory(destdir: str) -> Iterator[str]:
    """A new staging directory in ``destdir`` (created if missing), removed on
    exit; ``destdir`` itself is removed again if this run created it and
    nothing was committed into it."""
    created = not os.path.exists(destdir)
    os.makedirs(destdir, exist_ok=True)
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{socket.gethostname()}-{os.getpid()}-", dir=destdir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if created and not os.listdir(destdir):
            os.rmdir(destdir)
