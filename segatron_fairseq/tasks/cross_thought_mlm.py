"""Task ``cross_thought_mlm``: Cross-Thought pre-training.

The split's token stream (a ``segatron-preprocess`` or ``fairseq-preprocess``
directory) is cut into samples of ``num_sequences`` consecutive short
sequences of ``sequence_length`` tokens (500 x 64 in the paper; fairseq's
``TokenBlockDataset``, never shuffled inside a sample), 15% of the tokens are
masked (``MaskTokensDataset``, 80/10/10) and fairseq's ``masked_lm`` criterion
scores them. ``src_tokens`` and ``target`` are (B, M, L). A sample is one
batch item: ``--batch-size`` counts samples, ``--max-tokens`` their M*L
tokens, and the model's positions limit each sequence of L tokens, never the
sample (``PerSequenceSizeCheck``).
"""
import logging
import os
from dataclasses import dataclass, field

from fairseq.data import (
    IdDataset,
    MaskTokensDataset,
    NumelDataset,
    NumSamplesDataset,
    TokenBlockDataset,
    data_utils,
)
from fairseq.data.indexed_dataset import MMapIndexedDataset
from fairseq.tasks import register_task

from segatron_fairseq.data import (
    FieldDataset,
    ShortSequenceDataset,
    ShortSequenceSampleDataset,
)
from segatron_fairseq.segments import MASK_SYMBOL
from segatron_fairseq.tasks.masking import MaskingConfig, load_dictionary_with_mask, span_mask_dataset
from segatron_fairseq.tasks.per_sequence_sizes import PerSequenceSizeCheck
from segatron_fairseq.tasks.shards import first_shard
from segatron_fairseq.tasks.single_dictionary_task import SingleDictionaryTask
from segatron_preprocess.corpus_format import METADATA_FILE
from segatron_preprocess.split_reader import check_token_ids

logger = logging.getLogger(__name__)


@dataclass
class CrossThoughtMLMConfig(MaskingConfig):
    num_sequences: int = field(default=500, metadata={"help": "M short sequences per sample"})
    sequence_length: int = field(default=64, metadata={"help": "L tokens per short sequence"})


@register_task("cross_thought_mlm", dataclass=CrossThoughtMLMConfig)
class CrossThoughtMLMTask(PerSequenceSizeCheck, SingleDictionaryTask):
    def __init__(self, cfg: CrossThoughtMLMConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.mask_idx = dictionary.index(MASK_SYMBOL)

    @classmethod
    def setup_task(cls, cfg: CrossThoughtMLMConfig, **kwargs):
        if cfg.mask_span == "sentence":
            raise ValueError("--mask-span sentence: cross_thought_mlm's samples are a token stream without "
                             "sentence indexes; use token or span")
        return cls(cfg, load_dictionary_with_mask(cfg.data))

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        if os.path.isfile(os.path.join(first_shard(self.cfg.data), METADATA_FILE)):  # segatron-preprocess's: whole
            tokens = self.open_split(split, epoch).tokens
        else:  # what fairseq-preprocess writes
            path = os.path.join(self.split_directory(split, epoch), split)
            tokens = data_utils.load_indexed_dataset(path, self.dictionary)
            if tokens is None:
                raise FileNotFoundError(f"split '{split}' not found: {path}.bin/.idx")
            if isinstance(tokens, MMapIndexedDataset):
                check_token_ids(tokens, path, len(self.dictionary))
        block = self.cfg.num_sequences * self.cfg.sequence_length
        blocks = TokenBlockDataset(tokens, tokens.sizes, block, pad=self.dictionary.pad(), eos=self.dictionary.eos(),
                                   break_mode="none")
        if self.cfg.mask_span == "token":
            source, target = MaskTokensDataset.apply_mask(
                blocks, self.dictionary, pad_idx=self.dictionary.pad(), mask_idx=self.mask_idx, seed=self.cfg.seed,
                mask_prob=self.cfg.mask_prob, leave_unmasked_prob=self.cfg.leave_unmasked_prob,
                random_token_prob=self.cfg.random_token_prob,
            )
        else:
            masked = span_mask_dataset(blocks, self.dictionary, self.mask_idx, self.cfg)
            source, target = FieldDataset(masked, "source"), FieldDataset(masked, "target")
        shape = (self.cfg.num_sequences, self.cfg.sequence_length, self.dictionary.pad())
        self.datasets[split] = ShortSequenceSampleDataset(
            {
                "id": IdDataset(),
                "net_input": {"src_tokens": ShortSequenceDataset(source, *shape)},
                "target": ShortSequenceDataset(target, *shape),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(source, reduce=True),
            },
            blocks.sizes, self.cfg.sequence_length,
        )
        logger.info(f"{split}: {len(blocks):,} samples of {self.cfg.num_sequences} x {self.cfg.sequence_length} tokens")
