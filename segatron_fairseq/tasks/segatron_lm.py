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

Generation (``fairseq-generate``, ``fairseq-interactive``): each prompt is
read after a leading ``</s>``, as a language_modeling prompt, and continued
by fairseq's ``SequenceGenerator`` with the decoder's incremental state.
``--sample-break-mode eos`` makes every item (line) of a binarized split a
prompt for ``fairseq-generate``; ``fairseq-interactive`` takes lines of raw
text, split into the corpus's sub-words when no ``--bpe`` is given. New
tokens (prompt tokens included) are flagged as they arrive by
``GenerationIndexer``, with the corpus's sentence splitter.
"""
import functools
import logging
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch
from fairseq.data import (
    AppendTokenDataset,
    IdDataset,
    ListDataset,
    NestedDictionaryDataset,
    NumelDataset,
    PadDataset,
    PrependTokenDataset,
    iterators,
)
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import OptionValueError
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import register_task
from omegaconf import II

from segatron_fairseq.data import SegmentStreamDataset
from segatron_fairseq.models.segatron_xl_decoding import GenerationSetup
from segatron_fairseq.tasks.shards import first_shard
from segatron_fairseq.tasks.single_dictionary_task import (
    SingleDictionaryTask,
    load_corpus_dictionary,
    verify_data_field,
)
from segatron_preprocess.text_encoder import TextEncoder

logger = logging.getLogger(__name__)


@dataclass
class SegatronLMConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "segatron-preprocess output directory"})
    tgt_len: int = field(default=150, metadata={"help": "tokens per row per step (truncated BPTT length)",
                                                "min": 1})
    sample_break_mode: ChoiceEnum(["none", "eos"]) = field(default="none", metadata={
        "help": "none: the split is one stream, read in rows of --tgt-len (training, fairseq-eval-lm); eos: each "
                "item (line) is a prompt for fairseq-generate"})
    verify_data: bool = verify_data_field()
    batch_size: Optional[int] = II("dataset.batch_size")
    batch_size_valid: Optional[int] = II("dataset.batch_size_valid")
    train_subset: str = II("dataset.train_subset")
    seed: int = II("common.seed")


@register_task("segatron_lm", dataclass=SegatronLMConfig)
class SegatronLMTask(SingleDictionaryTask):
    MODELS = ("segatron_xl",)  # its samples carry the segment starts Segatron-XL (and Transformer-XL) read

    @classmethod
    def setup_task(cls, cfg: SegatronLMConfig, **kwargs):
        task_name = getattr(cfg, "_name", None) or "segatron_lm"  # or a task built on it (xlnet_plm)
        dictionary = load_corpus_dictionary(cfg.data, f"the data of --task {task_name}")
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def build_model(self, cfg, from_checkpoint=False):
        """The model, which must read a whole segment: --tgt-len within its
        ``max_positions`` (None, XLNet's, reads any: its task has no --tgt-len)."""
        model = super().build_model(cfg, from_checkpoint)
        longest = model.max_positions()
        if longest is not None and self.cfg.tgt_len > longest:
            raise OptionValueError(f"--tgt-len {self.cfg.tgt_len}: more than the model reads in one segment, "
                                   f"{longest} (--max-target-positions)")
        return model

    def _rows(self, split: str) -> int:
        if split == self.cfg.train_subset:
            rows = self.cfg.batch_size
        else:
            rows = self.cfg.batch_size_valid or self.cfg.batch_size
        return rows or 1

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        corpus = self.open_split(split, epoch)
        if self.cfg.sample_break_mode == "eos":
            if split == self.cfg.train_subset:
                raise ValueError("--sample-break-mode eos makes prompts for fairseq-generate; training reads the "
                                 "split as one stream (--sample-break-mode none)")
            eos = self.dictionary.eos()
            items = (corpus.tokens[i] for i in range(len(corpus)))
            prompts = [item for item in items if (item != eos).any()]  # blank lines are not prompts
            self.datasets[split] = self.build_dataset_for_inference(prompts, [len(p) for p in prompts])
            logger.info(f"{split}: {len(prompts):,} prompts ({len(corpus) - len(prompts):,} blank items left out)")
            return
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

    def build_dataset_for_inference(self, src_tokens: List[torch.Tensor], src_lengths: List[int], **kwargs):
        """Prompts: ``src_tokens`` (as ``Dictionary.encode_line`` gives them: one
        trailing ``</s>``, which is dropped so that the text goes on in the
        prompt's last paragraph) read after a leading ``</s>``; the target is
        the prompt followed by a pad, as in fairseq's language_modeling."""
        eos, pad = self.dictionary.eos(), self.dictionary.pad()
        prompts = [torch.as_tensor(t).long() for t in src_tokens]
        prompts = [t[:-1] if len(t) and t[-1] == eos else t for t in prompts]
        sizes = np.array([len(p) for p in prompts])
        prompt_dataset = ListDataset(prompts, sizes)
        source = PrependTokenDataset(prompt_dataset, eos)
        return NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {"src_tokens": PadDataset(source, pad_idx=pad, left_pad=False),
                              "src_lengths": NumelDataset(source, reduce=False)},
                "target": PadDataset(AppendTokenDataset(prompt_dataset, pad), pad_idx=pad, left_pad=False),
            },
            sizes=[sizes + 1],
        )

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """Continue each prompt: its tokens are forced, then generated."""
        if constraints is not None:
            raise NotImplementedError("constrained decoding is not supported with --task segatron_lm")
        with torch.no_grad():
            if prefix_tokens is None and sample["net_input"]["src_tokens"].nelement():
                prefix_tokens = sample["net_input"]["src_tokens"][:, 1:]  # after the leading </s>
            return generator.generate(models, sample, prefix_tokens=prefix_tokens, bos_token=self.dictionary.eos())

    @functools.cached_property
    def text_encoder(self) -> TextEncoder:
        """The corpus's own splitter, sub-words and dictionary (``TextEncoder``)."""
        return TextEncoder(first_shard(self.cfg.data), self.dictionary)

    def build_generator(self, models, args, seq_gen_cls=None, extra_gen_cls_kwargs=None,
                        prefix_allowed_tokens_fn=None):
        """fairseq's generator, with each model's decoder given its window
        (``decoding_window``) and a ``GenerationIndexer`` per row."""
        for model in models:
            new_indexer = self.text_encoder.generation_indexer if model.segment_parts() else None
            model.prepare_generation(GenerationSetup(model.decoding_window(self.cfg.tgt_len), new_indexer))
        return super().build_generator(models, args, seq_gen_cls, extra_gen_cls_kwargs, prefix_allowed_tokens_fn)

    def build_bpe(self, args):
        """``--bpe`` when given; else, for a sentencepiece corpus, its own model
        (fairseq-interactive splits raw lines with it and joins the output)."""
        bpe = super().build_bpe(args)
        if bpe is None and not self.text_encoder.segmenter.subwords.is_whitespace:
            return CorpusSubwords(self.text_encoder.segmenter.subwords)
        return bpe

    def get_batch_iterator(self, dataset, num_workers=0, epoch=1, data_buffer_size=0,
                           skip_remainder_batch=False, **kwargs):
        if not isinstance(dataset, SegmentStreamDataset):  # prompts
            return super().get_batch_iterator(dataset, num_workers=num_workers, epoch=epoch,
                                              data_buffer_size=data_buffer_size,
                                              skip_remainder_batch=skip_remainder_batch, **kwargs)
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
        if not isinstance(dataset, SegmentStreamDataset):
            raise ValueError("fairseq-eval-lm reads the split as one stream: leave --sample-break-mode at none")
        return self.get_batch_iterator(dataset, num_workers=num_workers,
                                       data_buffer_size=data_buffer_size).next_epoch_itr(shuffle=False)

    def begin_epoch(self, epoch, model):
        model.reset_memory(training=True)

    def begin_valid_epoch(self, epoch, model):
        model.reset_memory(training=False)


class CorpusSubwords:
    """fairseq's bpe interface over the corpus's sentencepiece model: a raw line
    to space-separated pieces, and back."""

    def __init__(self, subwords):
        self.subwords = subwords

    def encode(self, x: str) -> str:
        return " ".join(self.subwords.encode(x))

    def decode(self, x: str) -> str:
        return self.subwords.detokenize(x.split())

    def is_beginning_of_word(self, x: str) -> bool:
        return self.subwords.begins_word(x)
