"""Cut input files into document-aligned byte ranges and run one job per range,
in a process pool, with a progress bar in bytes."""
import dataclasses
import multiprocessing
import os
import sys
from typing import Callable, Iterator, List, Optional

from tqdm import tqdm

from . import readers
from .staging import check_interrupted, worker_process_setup

_POLL_SECONDS = 0.2  # how often the parent, waiting for a worker, looks for a signal


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


def run_jobs(jobs: List[Job], function: Callable, workers: int, desc: str) -> Iterator:
    """``function(job)`` (which returns ``(job, result)``) for every job, results
    in job order; a pool of ``workers`` processes when there is more than one."""
    total = sum(j.end - j.start for j in jobs)
    with tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=total < (16 << 20),
              file=sys.stderr) as bar:
        pool = None
        if workers <= 1 or len(jobs) == 1:
            results = map(function, jobs)
        else:
            pool = multiprocessing.Pool(min(workers, len(jobs)), initializer=_PoolWorker.initialize,
                                        initargs=(function,))
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
