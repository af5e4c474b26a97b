"""A split's manifest, read and checked: its entry in ``segatron_preprocess.json``
(``corpus_format``: the keys; ``output.commit`` writes it).

Opening a split (``SplitReader``) reads its entry, refusing one that is missing,
incomplete or of the wrong shape, and checks the split's files against it
cheaply: their sizes, the sha256 of the resources it was binarized with
(``dict.txt``, the Punkt and sub-word files), the sha256 of sampled blocks of
its eight files (``digests.py``). ``verify`` rehashes the eight files whole.

Entries written by 0.2.0 hold the state and the sizes only, those of 0.1.0
neither: they are read as before, trusting the sizes, after a warning (once per
directory) that nothing ties them to their dictionary.
"""
import logging
import os
import re
from typing import Dict, NamedTuple, Set

from .corpus_format import (
    COMPLETE,
    FILES,
    METADATA_FILE,
    RESOURCES,
    SAMPLED_SHA256,
    SHA256,
    SPLITS,
    STATE,
    dataset_files,
    json_kind,
    read_metadata,
)
from .digests import file_sha256, sampled_sha256
from .split_error import SplitFileError

logger = logging.getLogger("segatron_preprocess")

DIGEST_KEYS = (SHA256, SAMPLED_SHA256, RESOURCES)
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_AGAIN = "run segatron-preprocess again"
_warned: Set[str] = set()  # directories whose splits without digests were reported


class SplitManifest(NamedTuple):
    """The entry of split ``prefix`` (``DIR/valid``) in ``path`` (DIR's
    segatron_preprocess.json), its shape checked."""

    prefix: str
    path: str
    entry: Dict

    @property
    def has_sizes(self) -> bool:
        return FILES in self.entry

    @property
    def has_digests(self) -> bool:
        return SHA256 in self.entry


def _damaged(path: str, key: str, problem: str) -> SplitFileError:
    return SplitFileError(f"{path}: {key} {problem}; the manifest was edited or damaged: {_AGAIN}")


def _checked_map(path: str, key: str, value, names, check, wanted: str) -> None:
    """``value`` is an object giving each of ``names`` a value that passes ``check``."""
    if not isinstance(value, dict):
        raise _damaged(path, key, f"is {json_kind(value)}, not an object")
    for name in names:
        if name not in value:
            raise _damaged(path, key, f"has no {name}")
        if not check(value[name]):
            raise _damaged(path, f"{key}.{name}", f"is {json_kind(value[name])}, not {wanted}")


def _is_size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_digest(value) -> bool:
    return isinstance(value, str) and _HEX_DIGEST.fullmatch(value) is not None


def _is_resource(name: str) -> bool:
    """A path inside the directory: relative, without ``..``."""
    return (isinstance(name, str) and name != "" and not os.path.isabs(name)
            and ".." not in name.replace("\\", "/").split("/"))


def _check_entry(path: str, split: str, files, entry: Dict) -> None:
    key = f"splits.{split}"
    state = entry.get(STATE)
    if not isinstance(state, str):
        problem = "is missing" if state is None else f"is {json_kind(state)}, not a string"
        raise _damaged(path, f"{key}.{STATE}", problem)
    if state != COMPLETE:
        return  # the reader refuses it, saying so
    _checked_map(path, f"{key}.{FILES}", entry.get(FILES), files, _is_size, "a size in bytes")
    if not any(name in entry for name in DIGEST_KEYS):
        return  # written by 0.2.0
    for name in DIGEST_KEYS:
        if name not in entry:
            raise _damaged(path, f"{key}.{name}", "is missing")
    for name in (SHA256, SAMPLED_SHA256):
        _checked_map(path, f"{key}.{name}", entry[name], files, _is_digest, "a sha256 in hex")
    resources = entry[RESOURCES]
    if not isinstance(resources, dict):
        raise _damaged(path, f"{key}.{RESOURCES}", f"is {json_kind(resources)}, not an object")
    for name, digest in resources.items():
        if not _is_resource(name):
            raise _damaged(path, f"{key}.{RESOURCES}", f"names {name!r}, not a file inside the directory")
        if not _is_digest(digest):
            raise _damaged(path, f"{key}.{RESOURCES}.{name}", f"is {json_kind(digest)}, not a sha256 in hex")


def read_split_manifest(prefix: str) -> SplitManifest:
    """The entry of split ``prefix``, its shape checked. Refused (``SplitFileError``;
    ``FileNotFoundError`` without a metadata file): no entry, an entry of the wrong
    shape or without a state, an entry with some digests but not all."""
    directory, split = os.path.dirname(prefix) or ".", os.path.basename(prefix)
    path = os.path.join(directory, METADATA_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: nothing says that the files of split {prefix} were written "
                                f"by segatron-preprocess with {directory}'s dictionary; {_AGAIN}")
    try:
        metadata = read_metadata(directory)
    except ValueError as err:
        raise SplitFileError(f"{err}; {_AGAIN}") from None
    splits = metadata.get(SPLITS, {})
    entry = splits.get(split)
    if entry is None:
        raise SplitFileError(f"{path} has no entry for split {split!r}: the files of {prefix} were not written "
                             f"there by segatron-preprocess (copied from another directory?); binarize the split "
                             f"into {directory}")
    if not isinstance(entry, dict):
        raise _damaged(path, f"splits.{split}", f"is {json_kind(entry)}, not an object")
    if any(key in entry for key in (STATE, FILES, *DIGEST_KEYS)):  # an entry of 0.1.0 has none of them
        _check_entry(path, split, [os.path.basename(f) for f in dataset_files(prefix)], entry)
    return SplitManifest(prefix, path, entry)


def check_state_and_sizes(manifest: SplitManifest) -> None:
    """The split was committed whole (its state), and each file has the size recorded."""
    entry = manifest.entry
    if STATE in entry and entry[STATE] != COMPLETE:
        raise SplitFileError(f"{manifest.prefix}: segatron-preprocess did not finish writing this split (its "
                             f"manifest in {METADATA_FILE} says {entry[STATE]}); {_AGAIN}")
    if not manifest.has_sizes:
        return
    for path in dataset_files(manifest.prefix):
        size = entry[FILES][os.path.basename(path)]
        if os.path.getsize(path) != size:
            raise SplitFileError(f"{path} has {os.path.getsize(path):,} bytes, its manifest in {METADATA_FILE} says "
                                 f"{size:,}: the split's files are not from one run; {_AGAIN}")


def _warn_without_digests(manifest: SplitManifest) -> None:
    directory = os.path.realpath(os.path.dirname(manifest.prefix) or ".")
    if directory in _warned:
        return
    _warned.add(directory)
    version, checked = ("0.2.0", "its file sizes are") if manifest.has_sizes else ("0.1.0", "its files are")
    logger.warning(f"{manifest.path}: split {os.path.basename(manifest.prefix)} was written by segatron-preprocess "
                   f"{version}, without digests: nothing ties it to its dictionary, and a split copied in from "
                   f"another run is not detected (only {checked} checked); {_AGAIN} to add them")


def check_contents(manifest: SplitManifest, verify: bool = False) -> None:
    """The resources the split was binarized with are the directory's, and its
    eight files hold what was written: the sha256 of sampled blocks, or with
    ``verify`` of the whole files. A split without digests is read after a
    warning; ``verify`` refuses it."""
    if not manifest.has_digests:
        if verify:
            raise SplitFileError(f"{manifest.prefix}: cannot be verified: its manifest in {manifest.path} holds no "
                                 f"digests (written by segatron-preprocess 0.2.0 or earlier); {_AGAIN} to add them")
        _warn_without_digests(manifest)
        return
    directory = os.path.dirname(manifest.prefix) or "."
    for name, expected in manifest.entry[RESOURCES].items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise SplitFileError(f"{path}: missing, but split {manifest.prefix} was binarized with it (its manifest "
                                 f"in {manifest.path}); {_AGAIN}")
        actual = file_sha256(path)
        if actual != expected:
            raise SplitFileError(f"{path} is not the {name} split {manifest.prefix} was binarized with (sha256 "
                                 f"{actual[:12]}, its manifest in {manifest.path} records {expected[:12]}): the "
                                 f"split was copied from another run, or {name} replaced; {_AGAIN}")
    digest, key, what = ((file_sha256, SHA256, "the whole file") if verify else
                         (sampled_sha256, SAMPLED_SHA256, "sampled blocks"))
    for path in dataset_files(manifest.prefix):
        expected = manifest.entry[key][os.path.basename(path)]
        actual = digest(path)
        if actual != expected:
            raise SplitFileError(f"{path}: not the bytes segatron-preprocess wrote (sha256 of {what} {actual[:12]}, "
                                 f"its manifest in {manifest.path} records {expected[:12]}): the file was changed, "
                                 f"or copied from another run; {_AGAIN}")
