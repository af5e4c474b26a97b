"""Checks of a console script's answer to a user's mistake (``cli/user_errors.py``): ONE line ``PROG: error: ...``
that names the file or option, last in the output, no traceback; a walk's ``Case``; and the bad files the tests
give."""
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Case:
    """``program args...`` must fail with one error line containing ``says``."""

    program: str
    args: str
    says: str
    needs: Tuple[str, ...] = ()


def assert_user_error(out: str, prog: str, *names) -> str:
    """``out`` (``run_cli``'s output of a failed run) ends in the one line ``prog[ subcommand]: error: ...``, which
    names each of ``names``; no traceback. Returns that line."""
    assert "Traceback" not in out, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith(prog) and ": error: " in line]
    assert len(errors) == 1, out[-3000:]
    assert out.strip().splitlines()[-1] == errors[0], out[-3000:]
    for name in names:
        assert str(name) in errors[0], errors[0]
    return errors[0]


def assert_refused(refusal, prog: str, *names) -> str:
    """A ``conftest.Refusal``: no traceback anywhere in its output, and its stderr ends in ``prog``'s one error
    line naming each of ``names``. Returns that line."""
    assert "Traceback" not in refusal.output, refusal.output[-3000:]
    return assert_user_error(refusal.stderr, prog, *names)


def listing(path) -> Optional[Dict[str, Tuple[int, int]]]:
    """What is at ``path``: None when nothing; else each file and folder under it (itself, for a file) with its
    size and modification time, to compare before and after a failed run."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    found = [path] if path.is_file() else sorted(path.rglob("*"))
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in found}


def write_bad_checkpoints(directory: Path, real: Path) -> Dict[str, Path]:
    """``empty.pt`` (no bytes) and ``truncated.pt`` (the first half of the checkpoint ``real``) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    data = real.read_bytes()
    (directory / "empty.pt").write_bytes(b"")
    (directory / "truncated.pt").write_bytes(data[:len(data) // 2])
    return {"empty": directory / "empty.pt", "truncated": directory / "truncated.pt"}
