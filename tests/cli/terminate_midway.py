"""Run a console script with one call held open, so that a test's SIGTERM lands while the script is writing:

    python terminate_midway.py MODULE:ATTRIBUTE PROGRAM ARGS...

wraps ``MODULE.ATTRIBUTE`` (``torch:save``, ``matplotlib.figure:Figure.savefig``, ``os:replace``): its first call
made while the script runs does its work, then prints ``HELD`` on stderr and waits; the test sends SIGTERM on
reading that line. Nothing else of the script changes.
"""
import functools
import importlib
import importlib.metadata
import sys
import time

HELD = "HELD"


def _hold_after_first_call(function):
    calls = []

    @functools.wraps(function)
    def held(*args, **kwargs):
        result = function(*args, **kwargs)
        if not calls:
            calls.append(True)
            print(HELD, file=sys.stderr, flush=True)
            time.sleep(300)  # the SIGTERM comes meanwhile
        return result

    return held


def main() -> None:
    target, program, *argv = sys.argv[1:]
    (entry_point,) = importlib.metadata.entry_points(group="console_scripts", name=program)
    cli_main = entry_point.load()  # the script's modules first, so the wrapped call is the run's own
    module_name, attribute = target.split(":")
    owner = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    setattr(owner, name, _hold_after_first_call(getattr(owner, name)))
    sys.argv = [program, *argv]
    cli_main()


if __name__ == "__main__":
    main()
