"""Task ``segatron_lm``: truncated-BPTT language modelling over the output of
``segatron-preprocess``, for Segatron-XL (and Transformer-XL).

Each batch is ``batch_size`` rows x ``tgt_len`` tokens of contiguous streams
(``SegmentStreamDataset``); with data-parallel training each rank reads its
own rows. Batches are never shuffled, so row b of one batch continues row b of
the previous one, and the model's memory and segment counters carry over.
The memory is reset at the start of each training epoch and each validation.

Resuming from ``checkpoint_last.pt`` continues the same stream at the saved
batch (fairseq restores the iterator position); the memory is not saved, so
the first resumed segment sees no memory.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq.data import Dictionary, iterators
from fairseq.dataclass import FairseqDataclass
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import register_task
from omegaconf import II
from segatron_preprocess.corpus_format import DICT_FILE

from segatron_fairseq.data import SegmentIndexedDataset, SegmentStreamDataset
from segatron_fairseq.tasks.single_dictionary_task import SingleDictionaryTask

logger = logging.getLogger(__name__)


@dataclass
class SegatronLMConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "segatron-preprocess output directory"})
    tgt_len: int = field(default=150, metadata={"help": "tokens per row per step (truncated BPTT length)"})
    batch_size: Optional[int] = II("dataset.batch_size")
    batch_size_valid: Optional[int] = II("dataset.batch_size_valid")
    train_subset: str = II("dataset.train_subset")
    seed: int = II("common.seed")


@register_task("segatron_lm", dataclass=SegatronLMConfig)
class SegatronLMTask(SingleDictionaryTask):
    @classmethod
    def setup_task(cls, cfg: SegatronLMConfig, **kwargs):
        path = os.path.join(cfg.data, DICT_FILE)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path} not found: --task segatron_lm reads a segatron-preprocess directory")
        dictionary = Dictionary.load(path)
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def _rows(self, split: str) -> int:
        if split == self.cfg.train_subset:
            rows = self.cfg.batch_size
        else:
            rows = self.cfg.batch_size_valid or self.cfg.batch_size
        return rows or 1

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        prefix = os.path.join(self.cfg.data, split)
        corpus = SegmentIndexedDataset(prefix)
        num_shards, shard_id = 1, 0
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            num_shards = distributed_utils.get_data_parallel_world_size()
            shard_id = distributed_utils.get_data_parallel_rank()
        self.datasets[split] = SegmentStreamDataset(
            corpus, self.dictionary.eos(), self.dictionary.pad(), self._rows(split), self.cfg.tgt_len,
            num_shards=num_shards, shard_id=shard_id,
        )
        dataset = self.datasets[split]
        logger.info(f"{split}: {dataset.num_tokens_total:,} tokens, {dataset.batch_size} rows x "
                    f"{dataset.row_len:,} per shard, {len(dataset)} batches of {self.cfg.tgt_len}")

    def get_batch_iterator(self, dataset, num_workers=0, epoch=1, data_buffer_size=0,
                           skip_remainder_batch=False, **kwargs):
        # each item is a whole batch in stream order; sharding happened in load_dataset
        return iterators.EpochBatchIterator(
            dataset=dataset,
            collate_fn=dataset.collater,
            batch_sampler=[[i] for i in range(len(dataset))],
            num_workers=num_workers,
            epoch=epoch,
            buffer_size=data_buffer_size,
            disable_shuffling=True,
            skip_remainder_batch=skip_remainder_batch,
        )

    def eval_lm_dataloader(self, dataset, max_tokens=None, batch_size=None, max_positions=None,
                           num_shards=1, shard_id=0, num_workers=1, data_buffer_size=10, context_window=0):
        if context_window > 0:
            raise ValueError("--context-window is not used with segatron_lm: the model's memory gives context")
        if num_shards > 1:
            raise ValueError("fairseq-eval-lm with segatron_lm runs on one process (the stream is sequential)")
        return self.get_batch_iterator(dataset, num_workers=num_workers,
                                       data_buffer_size=data_buffer_size).next_epoch_itr(shuffle=False)

    def begin_epoch(self, epoch, model):
        model.reset_memory(training=True)

    def begin_valid_epoch(self, epoch, model):
        model.reset_memory(training=False)
