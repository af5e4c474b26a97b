"""Shared helpers: run the venv's console scripts and fail with their output."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from segatron_fairseq import PLUGIN_DIR  # noqa: F401  (the --user-dir of every test)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_cli(name, *args, cwd=None, expect_ok=True):
    """Run console script ``name`` from the venv; return its combined output."""
    cmd = [str(BIN / name), *map(str, args)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-6000:]}")
    if not expect_ok and proc.returncode == 0:
        pytest.fail(f"{' '.join(cmd)} succeeded but should have failed:\n{proc.stdout[-3000:]}")
    return proc.stdout


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (for torchrun)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cli():
    return run_cli
