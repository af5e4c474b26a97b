"""preprocess/atomic.py: a writer stages beside its destination under a name of its own, deletes nothing it did not
make, never replaces a directory, device, FIFO or socket, and renames several files in all together or not at all."""
import errno
import os
import socket
import stat

import pytest

from segatron_preprocess.atomic import atomic_path, atomic_paths


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _contents(folder):
    """Every entry under ``folder``: a file's text, else its kind (``stat.filemode``'s letter: d, p, s, c, l)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        found[str(path.relative_to(folder))] = path.read_text() if stat.S_ISREG(mode) else stat.filemode(mode)[0]
    return found


def test_the_users_files_beside_the_destination_are_never_touched(tmp_path):
    """``.NAME.tmp`` was once the staging name, ``NAME.partial`` the export's: both are the user's."""
    (tmp_path / "out.json").write_text("old")
    (tmp_path / ".out.json.tmp").write_text("notes")
    (tmp_path / "out.json.partial").mkdir()
    (tmp_path / "out.json.partial" / "notes.txt").write_text("notes")
    before = _contents(tmp_path)
    with pytest.raises(RuntimeError), atomic_path(str(tmp_path / "out.json")) as tmp:
        _write(tmp, "half")
        raise RuntimeError("the writer failed")
    assert _contents(tmp_path) == before
    with atomic_path(str(tmp_path / "out.json")) as tmp:
        _write(tmp, "new")
    assert _contents(tmp_path) == {**before, "out.json": "new"}


def test_a_directory_is_staged_whole_and_renamed_in(tmp_path):
    with atomic_path(str(tmp_path / "model")) as staging:
        os.mkdir(staging)
        _write(os.path.join(staging, "config.json"), "{}")
        assert not (tmp_path / "model").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert (tmp_path / "model" / "config.json").read_text() == "{}"


def _fifo(path):
    os.mkfifo(path)


def _socket(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def _device(path):
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs root")


@pytest.mark.parametrize("make, kind", [(_fifo, "a named pipe (FIFO)"), (_socket, "a socket"),
                                        (_device, "a character device"), (os.mkdir, "a directory")])
def test_what_is_not_a_regular_file_is_never_replaced(tmp_path, make, kind):
    make(tmp_path / "out")
    before = _contents(tmp_path)
    with pytest.raises(FileExistsError) as refused, atomic_path(str(tmp_path / "out")) as tmp:
        _write(tmp, "new")
    assert refused.value.filename == str(tmp_path / "out") and kind in refused.value.strerror
    assert _contents(tmp_path) == before


def test_one_that_appears_while_writing_is_not_replaced_either(tmp_path):
    with pytest.raises(FileExistsError, match="a named pipe"), atomic_path(str(tmp_path / "out")) as tmp:
        _write(tmp, "new")
        os.mkfifo(tmp_path / "out")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "out").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_symbolic_link_is_replaced_and_its_target_kept(tmp_path):
    (tmp_path / "target").write_text("theirs")
    (tmp_path / "out").symlink_to(tmp_path / "target")
    with atomic_path(str(tmp_path / "out")) as tmp:
        _write(tmp, "new")
    assert not (tmp_path / "out").is_symlink() and (tmp_path / "out").read_text() == "new"
    assert (tmp_path / "target").read_text() == "theirs"


def test_a_write_error_names_the_destination(tmp_path):
    """A full disk: the error of a write names no file (or the temporary one); it names the destination."""
    with pytest.raises(OSError) as failed, atomic_path(str(tmp_path / "out.png")):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(tmp_path / "out.png")
    with pytest.raises(OSError) as failed, atomic_paths([str(tmp_path / "a"), str(tmp_path / "b")]) as staged:
        open(os.path.join(staged[1], "no such folder"), "w")
    assert failed.value.filename == str(tmp_path / "b")
    assert _contents(tmp_path) == {}


def _renames_failing_at(monkeypatch, target, happened: bool, error: BaseException):
    """os.replace raising ``error`` at the rename onto ``target``: before it (``happened`` False) or just after it,
    as a signal's exception raised once the call has returned."""
    replace = os.replace

    def failing(source, destination):
        if str(destination) == str(target) and not str(source).endswith("~"):  # the new file's rename
            if happened:
                replace(source, destination)
            raise error
        replace(source, destination)

    monkeypatch.setattr(os, "replace", failing)


@pytest.mark.parametrize("happened, error", [(False, PermissionError(errno.EPERM, "Operation not permitted")),
                                             (True, KeyboardInterrupt())])
def test_several_files_are_renamed_in_all_or_none(tmp_path, monkeypatch, happened, error):
    (tmp_path / "a").write_text("old a")
    (tmp_path / "b").write_text("old b")
    before = _contents(tmp_path)
    paths = [str(tmp_path / name) for name in "abc"]
    _renames_failing_at(monkeypatch, tmp_path / "b", happened, error)
    with pytest.raises(type(error)), atomic_paths(paths) as staged:
        for path, tmp in zip(paths, staged):
            _write(tmp, "new " + os.path.basename(path))
    assert _contents(tmp_path) == before
    assert not (tmp_path / "c").exists()
    monkeypatch.undo()
    with atomic_paths(paths) as staged:
        for path, tmp in zip(paths, staged):
            _write(tmp, "new " + os.path.basename(path))
    assert [(tmp_path / name).read_text() for name in "abc"] == ["new a", "new b", "new c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


def test_an_old_file_that_cannot_be_put_back_is_kept_and_named(tmp_path, monkeypatch):
    (tmp_path / "a").write_text("old a")
    (tmp_path / "b").write_text("old b")
    replace = os.replace

    def failing(source, destination):  # b's new file cannot be renamed in, nor a's old one back
        if str(destination) == str(tmp_path / "b") and not str(source).endswith("~") or (
                str(destination) == str(tmp_path / "a") and str(source).endswith("~")):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(destination))
        replace(source, destination)

    monkeypatch.setattr(os, "replace", failing)
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    with pytest.raises(OSError, match="nor this one put back: it is kept as") as failed, atomic_paths(paths) as staged:
        for tmp in staged:
            _write(tmp, "new")
    kept = failed.value.strerror.rsplit(" ", 1)[-1]
    assert failed.value.filename == str(tmp_path / "a") and open(kept).read() == "old a"
    assert (tmp_path / "b").read_text() == "old b" and not (tmp_path / "a").exists()
