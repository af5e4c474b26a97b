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
    SPLITS,
    STATE,
    WRITING,
    dataset_files,
    dataset_prefixes,
    index_prefix,
    read_metadata,
)
from .errors import PreprocessError
from .staging import uninterrupted

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
       (COMPLETE, the size of each file), written last;
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
                finals = dataset_files(os.path.join(destdir, split))
                recorded[split] = {**summaries[split], STATE: COMPLETE,
                                   FILES: {os.path.basename(final): os.path.getsize(final) for final in finals}}
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
