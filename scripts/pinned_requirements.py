"""The installed version of each named distribution, as pip requirements that keep it.

    .venv/bin/python scripts/pinned_requirements.py torch      # torch==2.13.0 (or torch==2.13.0+cpu)

The version is the distribution's own (its metadata), the one pip compares a requirement with.
A package's ``__version__`` may differ: the CUDA wheels of torch on the package index report
``2.13.0+cu130`` while pip installed ``torch 2.13.0``, and ``torch==2.13.0+cu130`` is a
requirement no index can meet.
"""
import sys
from importlib import metadata


def pinned(name: str) -> str:
    try:
        return f"{name}=={metadata.version(name)}"
    except metadata.PackageNotFoundError:
        sys.exit(f"pinned_requirements: {name} is not installed in {sys.prefix}")


if __name__ == "__main__":
    print("\n".join(pinned(name) for name in sys.argv[1:]))
