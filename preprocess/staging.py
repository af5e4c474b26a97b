"""Where a run writes before it commits, and what stops it.

Everything a run produces (a trained Punkt or sentencepiece model, the
dictionary, every split) is written to a staging directory inside the
destination, ``.segatron-preprocess-HOST-PID-RANDOM``, and moved into place
only when the whole run has succeeded (``output.commit``). A refused or failed
run removes its staging directory and leaves the destination as it was.

One run at a time writes a destination: a run holds an exclusive
``fcntl.flock`` on ``DESTDIR/.segatron-preprocess.lock`` from its first look
at the destination to its end; a second run into the same destination is
refused at once with one line naming the run that holds it.

SIGTERM and SIGINT are noted by their handler, never raised where they land
(code that swallows exceptions, such as a ``__del__``, could lose them);
``check_interrupted`` raises ``Interrupted`` at the run's next step (every
line read, every chunk a worker returns, every split), so the same clean-up
runs. The pool's workers (``jobs.py``) leave SIGINT to the run's process, end
at once on SIGTERM (the pool's terminate), and die with the run's process
(Linux ``PR_SET_PDEATHSIG``, through the forkserver that forks them). After a
SIGKILL the staging directory stays behind; the next run into the destination
removes it when it can prove it abandoned: made on this host by a process that
no longer exists.
"""
import contextlib
import ctypes
import fcntl
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
from typing import Iterator, List

from .errors import PreprocessError

logger = logging.getLogger("segatron_preprocess")

PREFIX = ".segatron-preprocess-"
LOCK_FILE = ".segatron-preprocess.lock"
_PR_SET_PDEATHSIG = 1
_received: List[int] = []  # SIGTERM / SIGINT noted inside interruptible(), in order


class Interrupted(Exception):
    """The run received SIGTERM or SIGINT."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _note_signal(signum, frame):
    _received.append(signum)


def check_interrupted() -> None:
    """Raise ``Interrupted`` when a SIGTERM or SIGINT has arrived inside ``interruptible``."""
    if _received:
        raise Interrupted(_received[0])


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT inside the block are noted for ``check_interrupted``."""
    _received.clear()
    previous = {s: signal.signal(s, _note_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _received.clear()


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


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent ends (Linux
    ``PR_SET_PDEATHSIG``; elsewhere, nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: workers may outlive a killed run
        pass


def worker_process_setup() -> None:
    """In a pool worker: leave SIGINT to the run's process, let SIGTERM (the
    pool's terminate) end the worker at once, and die with the run's process.

    The forkserver (``jobs.pool_context``) forks the worker with SIGINT blocked
    and SIGTERM at its default action, so a signal that comes before this
    setup does what it does after it: SIGINT never reaches the worker, SIGTERM
    ends it. The worker's parent is the forkserver, which dies with the run's
    process (``forkserver_preload``); a worker whose run's process ended before
    this setup ends here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    run = multiprocessing.parent_process()
    if run is not None and not run.is_alive():
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


def _lock_holder(fd: int) -> str:
    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    return f" ({holder})" if holder else ""


@contextlib.contextmanager
def locked_destination(destdir: str) -> Iterator[None]:
    """``destdir`` (created if missing) for this run alone, or ``PreprocessError``
    at once when another run holds it. On exit the lock file is removed, and
    ``destdir`` too if this run created it and nothing was committed into it."""
    path = os.path.join(destdir, LOCK_FILE)
    created = False
    while True:
        try:
            if not os.path.isdir(destdir):
                os.makedirs(os.path.dirname(os.path.abspath(destdir)), exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(destdir)
                    created = True
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the run that held it removed the directory meanwhile
                continue
        except OSError as err:
            if created:
                os.rmdir(destdir)
            raise PreprocessError(f"{err.filename}: cannot create it ({err.strerror}); --destdir must be a "
                                  f"directory this user can write") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(fd)
            os.close(fd)
            raise PreprocessError(f"{destdir}: another segatron-preprocess run{holder} is writing this "
                                  f"destination; wait for it to end, or use another --destdir") from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # locked a file that the run before removed: lock the one in place now
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()}".encode(), 0)
        yield
    finally:
        os.remove(path)
        os.close(fd)
        if created and not os.listdir(destdir):
            os.rmdir(destdir)


@contextlib.contextmanager
def staging_directory(destdir: str) -> Iterator[str]:
    """A new staging directory in ``destdir``, removed on exit."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{socket.gethostname()}-{os.getpid()}-", dir=destdir)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
