"""The binarizer's output: per-job chunk datasets merged into a staged split,
and the commit that moves a whole run into the destination."""
import json
import os
import shutil
import tempfile
from typing import Dict, List, Optional, Tuple

from .atomic import atomic_path
from .corpus_format import (
    COMPLETE,
    FILES,
    METADATA_FILE,
    RESOURCE_NAMES,
    RESOURCES,
    SAMPLED_SHA256,
    SHA256,
    SPLITS,
    STATE,
    WRITING,
    dataset_files,
    dataset_prefixes,
    index_prefix,
    read_metadata,
)
from .digests import file_sha256, sampled_sha256
from .errors import PreprocessError
from .staging import check_interrupted, uninterrupted

# the directory, in the destination, that holds the files a commit replaces until it has succeeded
PREVIOUS_PREFIX = ".segatron-previous-"


def merge_chunks(chunk_prefixes: List[str], merged_prefix: str) -> None:
    """Merge the chunks' token and index datasets, in order, into ``merged_prefix``."""
    from fairseq.data import indexed_dataset

    chunk_sets = [dataset_prefixes(prefix) for prefix in chunk_prefixes]
    for k, merged in enumerate(dataset_prefixes(merged_prefix)):
        first = chunk_sets[0][k]
        dtype = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(first)).dtype
        builder = indexed_dataset.MMapIndexedDatasetBuilder(indexed_dataset.data_file_path(merged), dtype)
        for chunk in chunk_sets:
            builder.merge_file_(chunk[k])
        builder.finalize(indexed_dataset.index_file_path(merged))


def continue_paragraph_index(merged_prefix: str, chunk_stats: List) -> None:
    """--stream-style authors: each chunk counted its paragraphs from 0; add the
    paragraphs of the chunks before it, so the index runs over the split."""
    import numpy as np
    from fairseq.data import indexed_dataset

    prefix = index_prefix(merged_prefix, "paragraph")
    dtype = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(prefix)).dtype
    values = np.memmap(indexed_dataset.data_file_path(prefix), dtype=dtype, mode="r+")
    start, paragraphs_before = 0, 0
    for stats in chunk_stats:
        values[start:start + stats.tokens] += paragraphs_before
        start += stats.tokens
        paragraphs_before += stats.paragraphs
    values.flush()
    del values


def resource_digests(destdir: str, staging: str, new: List[str]) -> Dict[str, str]:
    """Path in ``destdir`` -> sha256 of each file of RESOURCE_NAMES that ``destdir``
    holds once the run is committed: ``new`` (names in ``staging``) or kept."""
    digests = {}
    for name in RESOURCE_NAMES:
        path = os.path.join(staging if name in new else destdir, name)
        if os.path.isfile(path):
            digests[name] = file_sha256(path)
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for file in sorted(files):
                relative = os.path.relpath(os.path.join(root, file), os.path.dirname(path))
                digests[relative.replace(os.sep, "/")] = file_sha256(os.path.join(root, file))
    return digests


def split_manifest(prefix: str, resources: Dict[str, str]) -> Dict:
    """The manifest of the finished split ``prefix`` (corpus_format): COMPLETE,
    the size, sha256 and sampled sha256 of its eight files, and ``resources``."""
    files = dataset_files(prefix)
    manifest = {STATE: COMPLETE, FILES: {}, SHA256: {}, SAMPLED_SHA256: {}, RESOURCES: resources}
    for path in files:
        name = os.path.basename(path)
        manifest[FILES][name] = os.path.getsize(path)
        manifest[SHA256][name] = file_sha256(path)
        manifest[SAMPLED_SHA256][name] = sampled_sha256(path)
        check_interrupted()
    return manifest


def _write_metadata(destdir: str, metadata: Dict) -> None:
    with atomic_path(os.path.join(destdir, METADATA_FILE)) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(metadata, f, indent=2)


def _read_bytes(path: str) -> Optional[bytes]:
    if not os.path.lexists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def _restore_bytes(path: str, data: Optional[bytes]) -> None:
    """``path`` as it was: ``data``, or no file when ``data`` is None."""
    if data is None:
        if os.path.lexists(path):
            os.remove(path)
        return
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def _problem(err: OSError) -> str:
    return err.strerror or str(err)


def commit(destdir: str, staging: str, resources: List[str], splits: List[str], settings: Dict,
           summaries: Dict[str, Dict]) -> None:
    """Move a successful run from ``staging`` into ``destdir``, with SIGTERM and
    SIGINT held back until it is done:

    1. the metadata marks the run's splits WRITING (a reader refuses them);
    2. the destination's files that the run replaces move aside, into a
       directory ``.segatron-previous-*`` in ``destdir``;
    3. the new resources (dictionary, Punkt, sentencepiece model) move in;
    4. each split's eight files move in, the token dataset's .idx last;
    5. the metadata gets the settings and each split's summary and manifest
       (``split_manifest``, computed in ``staging`` before the commit starts),
       written last;
    6. the files moved aside are removed.

    When a step fails, every move is undone in reverse order and the metadata
    is written back, so the destination is as it was; ``PreprocessError``
    names the file that failed. (Should undoing fail too, the message names
    the directory that keeps the previous files.)
    """
    metadata_path = os.path.join(destdir, METADATA_FILE)
    moves = [(os.path.join(staging, name), os.path.join(destdir, name)) for name in resources]
    for split in splits:
        files = list(zip(dataset_files(os.path.join(staging, split)), dataset_files(os.path.join(destdir, split))))
        moves += files[2:] + files[:2]
    resources_of_splits = resource_digests(destdir, staging, resources)
    manifests = {split: split_manifest(os.path.join(staging, split), resources_of_splits) for split in splits}
    with uninterrupted():
        try:
            previous_metadata = _read_bytes(metadata_path)
            previous = tempfile.mkdtemp(prefix=PREVIOUS_PREFIX, dir=destdir)
        except OSError as err:
            raise PreprocessError(f"{err.filename or destdir}: {_problem(err)}; {destdir} left as it was") from None
        done: List[Tuple[str, str]] = []  # renames (from, to), in order
        current, metadata_written = metadata_path, False
        try:
            metadata = read_metadata(destdir)
            recorded = metadata.setdefault(SPLITS, {})
            for split in splits:
                recorded[split] = {STATE: WRITING}
            _write_metadata(destdir, metadata)
            metadata_written = True
            for k, (_, final) in enumerate(moves):
                if os.path.lexists(final):
                    current = final
                    os.replace(final, os.path.join(previous, str(k)))
                    done.append((final, os.path.join(previous, str(k))))
            for staged, final in moves:
                current = final
                os.replace(staged, final)
                done.append((staged, final))
            for split in splits:
                recorded[split] = {**summaries[split], **manifests[split]}
            metadata.update(settings)
            current = metadata_path
            _write_metadata(destdir, metadata)
        except OSError as err:
            failure = f"{current}: cannot write it ({_problem(err)})"
            try:
                for moved_from, moved_to in reversed(done):
                    current = moved_from
                    os.replace(moved_to, moved_from)
                current = metadata_path
                if metadata_written:
                    _restore_bytes(metadata_path, previous_metadata)
            except OSError as undo_err:
                raise PreprocessError(f"{failure}; undoing the commit failed too at {current} "
                                      f"({_problem(undo_err)}): the destination's previous files are in "
                                      f"{previous}") from None
            shutil.rmtree(previous, ignore_errors=True)
            raise PreprocessError(f"{failure}; {destdir} left as it was") from None
        shutil.rmtree(previous, ignore_errors=True)
