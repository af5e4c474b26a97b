"""preprocess/termination.py: inside ``sigterm_raises`` a SIGTERM is Ctrl-C's exception (once), and the handler
before comes back."""
import signal

import pytest

from segatron_preprocess.termination import Terminated, sigterm_raises, stop_status


def test_sigterm_raises_once_then_the_handler_before_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt) as stop, sigterm_raises():
        try:
            signal.raise_signal(signal.SIGTERM)  # its handler runs before raise_signal returns
        finally:
            signal.raise_signal(signal.SIGTERM)  # a second one, during the clean-up: ignored
    assert isinstance(stop.value, Terminated)
    assert signal.getsignal(signal.SIGTERM) is before


def test_stop_status_is_128_plus_the_signal():
    assert stop_status(Terminated()) == ("terminated", 143)
    assert stop_status(KeyboardInterrupt()) == ("interrupted", 130)
