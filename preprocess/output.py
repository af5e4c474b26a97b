"""The binarizer's output: per-job chunk datasets merged into a staged split,
and the commit that moves a whole run into the destination."""
import json
import os
from typing import Dict, List

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
from .staging import uninterrupted


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


def commit(destdir: str, staging: str, resources: List[str], splits: List[str], settings: Dict,
           summaries: Dict[str, Dict]) -> None:
    """Move a successful run from ``staging`` into ``destdir``, with SIGTERM and
    SIGINT held back until it is done:

    1. the metadata marks the run's splits WRITING (a reader refuses them);
    2. the new resources (dictionary, Punkt, sentencepiece model) move in;
    3. each split's eight files move in, the token dataset's .idx last;
    4. the metadata gets the settings and each split's summary and manifest
       (COMPLETE, the size of each file), written last.
    """
    with uninterrupted():
        metadata = read_metadata(destdir)
        recorded = metadata.setdefault(SPLITS, {})
        for split in splits:
            recorded[split] = {STATE: WRITING}
        _write_metadata(destdir, metadata)
        for name in resources:
            os.replace(os.path.join(staging, name), os.path.join(destdir, name))
        for split in splits:
            files = list(zip(dataset_files(os.path.join(staging, split)), dataset_files(os.path.join(destdir, split))))
            for staged, final in files[2:] + files[:2]:
                os.replace(staged, final)
            recorded[split] = {**summaries[split], STATE: COMPLETE,
                               FILES: {os.path.basename(final): os.path.getsize(final) for _, final in files}}
        metadata.update(settings)
        _write_metadata(destdir, metadata)
