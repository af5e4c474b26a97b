"""cli/user_errors.py: how every console script answers a mistake, an interruption and an output it cannot write."""
import os
import signal

import pytest

from segatron_fairseq.cli.user_errors import check_output, exit_on_user_error


def test_a_system_error_names_its_file_and_ctrl_c_is_one_line(capsys):
    with pytest.raises(SystemExit) as stop, exit_on_user_error("prog"):
        raise PermissionError(1, "Operation not permitted", "out.partial", None, "out")
    assert stop.value.code == 1 and capsys.readouterr().err == "prog: error: out: Operation not permitted\n"
    with pytest.raises(SystemExit) as stop, exit_on_user_error("prog"):
        raise KeyboardInterrupt
    assert stop.value.code == 130 and capsys.readouterr().err == "prog: interrupted\n"


def _unhandled_sigterm(signum, frame):
    raise AssertionError("SIGTERM reached the handler outside exit_on_user_error")


def test_sigterm_ends_the_program_as_ctrl_c_does_with_its_own_status(capsys):
    """After the same clean-up (the ``finally``), with one line and exit status 143; the handler before is back."""
    previous = signal.signal(signal.SIGTERM, _unhandled_sigterm)
    try:
        cleaned = []
        with pytest.raises(SystemExit) as stop, exit_on_user_error("prog"):
            try:
                signal.raise_signal(signal.SIGTERM)
            finally:
                cleaned.append(True)
        assert stop.value.code == 143 and capsys.readouterr().err == "prog: terminated\n" and cleaned
        assert signal.getsignal(signal.SIGTERM) is _unhandled_sigterm
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_check_output_refuses_what_would_lose_a_file(tmp_path, monkeypatch):
    (tmp_path / "in.json").write_text("{}")
    os.link(tmp_path / "in.json", tmp_path / "link.json")
    with pytest.raises(ValueError, match="link.json: --out is the same file as --input"):
        check_output(str(tmp_path / "link.json"), inputs={"--input": str(tmp_path / "in.json")}, overwrite=True)
    with pytest.raises(ValueError, match="in.json: --out exists; pass --overwrite"):
        check_output(str(tmp_path / "in.json"))
    with pytest.raises(ValueError, match="--out is a directory"):
        check_output(str(tmp_path))
    with pytest.raises(ValueError, match="in.json: --out exists and is not a directory"):
        check_output(str(tmp_path / "in.json"), directory=True)
    check_output(str(tmp_path / "new" / "deeper" / "out.json"))  # folders are made when written
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match="fifo: --out is a named pipe \\(FIFO\\), which is never replaced"):
        check_output(str(tmp_path / "fifo"), overwrite=True)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as an unwritable folder (tests run as root)
    with pytest.raises(ValueError, match=f"out.json: --out cannot be written \\({tmp_path} is not writable\\)"):
        check_output(str(tmp_path / "out.json"))
