"""Cut input files into document-aligned byte ranges and run one job per range,
in a process pool, with a progress bar in bytes.

The pool's workers are forked by a forkserver (``pool_context``), never by the
run's own process: that process may have threads when it needs workers (the
progress bar's monitor, torch's, a caller's), and a fork of a process with
threads can deadlock in the child (Python 3.12+ warns about it). The
forkserver is a single-threaded process, started once per process; it imports
the workers' modules (``forkserver_preload``) once, so each worker starts with
them loaded. What a worker gets (``function``, the jobs) and gives back is
pickled; a worker also imports the program's main module, as spawned processes
do, so a program that runs jobs with workers keeps its own start under
``if __name__ == "__main__":``."""
import dataclasses
import multiprocessing
import os
import signal
import sys
from multiprocessing import forkserver, resource_tracker
from typing import Callable, Iterator, List, Optional

from tqdm import tqdm

from . import readers
from .staging import check_interrupted, worker_process_setup

_POLL_SECONDS = 0.2  # how often the parent, waiting for a worker, looks for a signal
_CONTEXT = multiprocessing.get_context("forkserver")
FORKSERVER_PRELOAD = f"{__package__}.forkserver_preload"


@dataclasses.dataclass
class Job:
    path: str
    input_format: str
    start: int
    end: int
    out_prefix: Optional[str]  # None: count tokens for the dictionary


def plan_jobs(path: str, input_format: str, chunk_bytes: int, workers: int, out_dir: Optional[str]) -> List[Job]:
    """Ranges of about ``chunk_bytes`` (at least one per worker), each starting
    at a document start; job i writes ``out_dir/i`` (or only counts tokens)."""
    size = os.path.getsize(path)
    chunks = max(workers, -(-size // chunk_bytes))
    offsets = readers.document_aligned_offsets(path, input_format, chunks)
    return [
        Job(path, input_format, start, end, None if out_dir is None else os.path.join(out_dir, str(i)))
        for i, (start, end) in enumerate(zip(offsets[:-1], offsets[1:]))
    ]


def pool_context() -> multiprocessing.context.BaseContext:
    """The multiprocessing context the pool's workers start in ('forkserver'),
    its forkserver running. The first call starts the forkserver; it loads
    ``forkserver_preload`` meanwhile, so a run calls this as early as it knows
    it will need workers.

    The forkserver starts with SIGINT blocked, and so does every worker it
    forks: a Ctrl-C (sent to the whole process group) that comes before a
    worker's ``worker_process_setup`` never reaches it. SIGTERM keeps its
    default action: a worker it reaches before its setup ends at once, as after.
    The forkserver dies with the thread that started it (Linux
    ``PR_SET_PDEATHSIG``): the run starts it from its main thread. (A
    forkserver that other code started in this process before is used as it
    is.)"""
    _CONTEXT.set_forkserver_preload([FORKSERVER_PRELOAD])
    # the resource tracker first: starting it unblocks SIGINT and SIGTERM on its way out
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return _CONTEXT


class _PoolWorker:
    """The callable of one pool process, set by the pool's initializer."""

    function: Optional[Callable] = None

    @classmethod
    def initialize(cls, function: Callable) -> None:
        worker_process_setup()
        cls.function = function

    @classmethod
    def run(cls, job: Job):
        return cls.function(job)


def _polled(results) -> Iterator:
    """The pool's results, waiting for each in short steps between which a
    noted signal stops the run."""
    while True:
        try:
            yield results.next(timeout=_POLL_SECONDS)
        except multiprocessing.TimeoutError:
            check_interrupted()
        except StopIteration:
            return


def _start_pool(workers: int, function: Callable):
    try:
        return pool_context().Pool(workers, initializer=_PoolWorker.initialize, initargs=(function,))
    except (OSError, EOFError):  # the forkserver ended, by the signal that stops the run (same process group)
        check_interrupted()
        raise


def run_jobs(jobs: List[Job], function: Callable, workers: int, desc: str) -> Iterator:
    """``function(job)`` (which returns ``(job, result)``) for every job, results
    in job order; a pool of ``workers`` processes when there is more than one
    (``function`` and the results are pickled on their way)."""
    total = sum(j.end - j.start for j in jobs)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=total < (16 << 20),
              file=sys.stderr) as bar:
        pool = None
        if workers <= 1 or len(jobs) == 1:
            results = map(function, jobs)
        else:
            pool = _start_pool(min(workers, len(jobs)), function)
            results = _polled(pool.imap(_PoolWorker.run, jobs))
        try:
            for job, result in results:
                check_interrupted()
                bar.update(job.end - job.start)
                yield result
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
