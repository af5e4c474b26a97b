"""The binarizer's output: per-job chunk datasets merged into a split, moved
into place, and the directory's metadata updated."""
import json
import os
from typing import Dict, List

from .atomic import atomic_path
from .corpus_format import METADATA_FILE, dataset_prefixes, read_metadata, SPLITS


def merge_chunks(chunk_prefixes: List[str], merged_prefix: str, final_prefix: str) -> None:
    """Merge the chunks' token and index datasets (in order) under
    ``merged_prefix``, then rename them to ``final_prefix``: the index datasets
    first and the token dataset's .idx last, so that a split whose token
    dataset is complete is complete."""
    from fairseq.data import indexed_dataset

    merged_prefixes, final_prefixes = dataset_prefixes(merged_prefix), dataset_prefixes(final_prefix)
    chunk_sets = [dataset_prefixes(prefix) for prefix in chunk_prefixes]
    for k, merged in enumerate(merged_prefixes):
        first = chunk_sets[0][k]
        dtype = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(first)).dtype
        builder = indexed_dataset.MMapIndexedDatasetBuilder(indexed_dataset.data_file_path(merged), dtype)
        for chunk in chunk_sets:
            builder.merge_file_(chunk[k])
        builder.finalize(indexed_dataset.index_file_path(merged))
    for merged, final in list(zip(merged_prefixes, final_prefixes))[::-1]:
        os.replace(indexed_dataset.data_file_path(merged), indexed_dataset.data_file_path(final))
        os.replace(indexed_dataset.index_file_path(merged), indexed_dataset.index_file_path(final))


def update_metadata(destdir: str, settings: Dict, split_summaries: Dict[str, Dict]) -> None:
    """Record the run's settings and its splits' summaries in ``segatron_preprocess.json``
    (the summaries of splits written earlier are kept)."""
    metadata = read_metadata(destdir)
    metadata.update(settings)
    metadata.setdefault(SPLITS, {}).update(split_summaries)
    with atomic_path(os.path.join(destdir, METADATA_FILE)) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(metadata, f, indent=2)
