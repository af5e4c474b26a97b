"""Write a file or directory so that readers see the old one or the new one, never half of it."""
import contextlib
import os
import shutil
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path beside ``path``; when the block succeeds it is
    renamed to ``path`` (``os.replace``), when it fails it is removed.

        with atomic_path("DIR/dict.txt") as tmp:
            dictionary.save(tmp)
    """
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.tmp")
    _remove(tmp)
    try:
        yield tmp
        if os.path.isdir(tmp) and os.path.isdir(path):
            shutil.rmtree(path)  # a directory cannot replace a non-empty one
        os.replace(tmp, path)
    finally:
        _remove(tmp)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
