"""Let a second environment import packages of this one without installing them again.

    .venv/bin/python scripts/share_packages.py TARGET torch

TARGET (a folder inside the second environment, made anew) receives a symbolic link to each
top-level file or folder of the named distributions and of every distribution they require
(their markers evaluated for this interpreter), their ``.dist-info`` folders included, so pip
and ``importlib.metadata`` there see them as installed. A ``.pth`` file in the second
environment's site-packages naming TARGET puts it on that environment's path, after its own
site-packages: what the second environment installs itself comes first. Both environments must
run the same Python (compiled extensions are shared).

Prints the shared distributions, one ``name==version`` a line: for torch 2.13.0's CPU build,
``torch==2.13.0+cpu``, ``filelock==...``, ``sympy==...``, ``mpmath==...`` and the others.
"""
import argparse
import os
import shutil
import sys
from importlib import metadata
from typing import Dict, List, Set

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def requirement_closure(names: List[str]) -> Dict[str, metadata.Distribution]:
    """Normalized name -> installed distribution, for ``names`` and everything they require here, extras
    included (torch's CUDA build requires ``cuda-toolkit[cublas,cudart,...]``, whose extras name the nvidia
    packages)."""
    found: Dict[str, metadata.Distribution] = {}
    extras_done: Dict[str, Set[str]] = {}
    pending = [(name, set()) for name in names]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name)
        if key in extras_done and extras <= extras_done[key]:
            continue
        if key not in found:
            try:
                found[key] = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                sys.exit(f"share_packages: {name} is not installed in {sys.prefix}")
        extras_done[key] = extras_done.get(key, set()) | extras
        for text in found[key].requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra})
                                                 for extra in {""} | extras_done[key]):
                pending.append((requirement.name, set(requirement.extras)))
    return found


def top_level_entries(dist: metadata.Distribution) -> List[str]:
    """The paths of ``dist``'s top-level files and folders in its site-packages (its RECORD's first
    components; scripts outside site-packages and byte-code caches left out)."""
    site = os.path.abspath(str(dist.locate_file("")))
    entries = {str(path).replace("\\", "/").split("/")[0] for path in dist.files or []}
    return sorted(os.path.join(site, entry) for entry in entries
                  if entry not in ("", "..", "__pycache__") and os.path.exists(os.path.join(site, entry)))


def share(target: str, names: List[str]) -> List[str]:
    """Link the closure of ``names`` into ``target`` (replaced); returns its ``name==version`` lines."""
    if os.path.lexists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    lines = []
    for dist in sorted(requirement_closure(names).values(), key=lambda d: canonicalize_name(d.metadata["Name"])):
        for path in top_level_entries(dist):
            link = os.path.join(target, os.path.basename(path))
            if not os.path.lexists(link):  # a namespace folder (nvidia/) serves several distributions
                os.symlink(path, link)
        lines.append(f"{dist.metadata['Name']}=={dist.version}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="folder to fill with links (replaced)")
    parser.add_argument("names", nargs="+", help="distributions to share, with what they require")
    args = parser.parse_args()
    print("\n".join(share(os.path.abspath(args.target), args.names)))


if __name__ == "__main__":
    main()
