"""Write files and directories so that readers see the old ones or the new ones, never half of them, and
nothing but what the writer made is ever deleted.

    with atomic_path("DIR/dict.txt") as tmp:
        dictionary.save(tmp)

Each destination gets a private directory beside it, ``.NAME.XXXXXXXX`` (``tempfile.mkdtemp``: new, made by
this call alone), in which the caller writes ``NAME``. When the block succeeds the new files are renamed into
place; the private directories are removed (unless one keeps an old file that could not be put back,
``_rename_all``). A destination may be missing, a regular file or a symbolic link (the link is replaced, its
target untouched); a directory, device, FIFO or socket is refused (``FileExistsError`` naming it) before the
block and again before the rename.
"""
import contextlib
import errno
import os
import shutil
import stat
import tempfile
from typing import Iterator, List, Optional, Sequence, Tuple

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def unreplaceable_kind(path: str) -> Optional[str]:
    """What ``path`` is when a writer must not replace it (``"a directory"``, ``"a named pipe (FIFO)"``, ...);
    None when it is missing (or under a file), a regular file or a symbolic link."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def check_replaceable(path: str) -> None:
    """``FileExistsError`` naming ``path`` when it is something a writer must not replace."""
    kind = unreplaceable_kind(path)
    if kind is not None:
        raise FileExistsError(errno.EEXIST, f"exists and is {kind}, which is never replaced; name a file", path)


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path for ``path``; when the block succeeds it is renamed to
    ``path`` (``os.replace``). An ``OSError`` of the block that names no file, or the
    temporary one, names ``path``."""
    with atomic_paths([path]) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_paths(paths: Sequence[str]) -> Iterator[List[str]]:
    """Yield a temporary path for each of ``paths``; when the block succeeds they
    are renamed into place, all or none (``_rename_all``). An ``OSError`` of the
    block that names a temporary path names its destination."""
    for path in paths:
        check_replaceable(path)
    private: List[str] = []
    renamed = False
    try:
        for path in paths:
            parent, name = os.path.split(os.path.abspath(path))
            try:
                private.append(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
            except OSError as err:
                raise OSError(err.errno, err.strerror, path) from err
        staged = [os.path.join(folder, os.path.basename(os.path.abspath(path)))
                  for folder, path in zip(private, paths)]
        try:
            yield staged
        except OSError as err:
            raise _naming_destination(err, paths, private) from err
        for path in paths:
            check_replaceable(path)
        _rename_all([(new, path, new + "~") for new, path in zip(staged, paths)])
        renamed = True
    finally:
        for folder, path in zip(private, paths):
            old = os.path.join(folder, os.path.basename(os.path.abspath(path)) + "~")
            if renamed or not os.path.lexists(old):  # else the old file that could not be put back stays
                shutil.rmtree(folder, ignore_errors=True)


def _naming_destination(err: OSError, paths: Sequence[str], private: List[str]) -> OSError:
    """``err`` naming the destination in place of its temporary path (or of no file, when there is one
    destination)."""
    if not err.strerror:
        return err
    for folder, path in zip(private, paths):
        if err.filename is not None and os.path.abspath(str(err.filename)).startswith(folder + os.sep):
            return OSError(err.errno, err.strerror, path)
    if err.filename is None and len(paths) == 1:
        return OSError(err.errno, err.strerror, paths[0])
    return err


def _rename_all(moves: List[Tuple[str, str, str]]) -> None:
    """Rename each ``new`` to its ``path`` (``old``: where an existing ``path`` waits meanwhile). One file is
    replaced in one step; several are all renamed or none: each rename is noted before it is made, and undone
    (when it happened) if a later one fails or an exception (a signal's) stops them. An old file that cannot be
    put back stays where it waits, and the error says where."""
    if len(moves) == 1:
        os.replace(moves[0][0], moves[0][1])
        return
    begun: List[Tuple[str, str]] = []
    try:
        for _, path, old in moves:
            if os.path.lexists(path):
                begun.append((path, old))
                os.replace(path, old)
        for new, path, _ in moves:
            begun.append((new, path))
            os.replace(new, path)
    except BaseException as failure:
        kept = []
        for source, target in reversed(begun):
            if os.path.lexists(target) and not os.path.lexists(source):
                try:
                    os.replace(target, source)
                except OSError:
                    kept.append((source, target))
        olds = [(source, target) for source, target in kept if target.endswith("~")]
        if olds:
            raise OSError(errno.EIO, f"the files could not be renamed in, nor this one put back: it is kept as "
                                     f"{olds[0][1]}", olds[0][0]) from failure
        raise
