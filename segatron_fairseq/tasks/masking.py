"""What the masked-LM tasks and the models fine-tuned from them share: the
corpus directory and BERT's masking options, and the dictionary of the
pre-training corpus with ``<mask>`` appended (so that fine-tuning and the
tools see the same vocabulary as pre-training)."""
import os
from dataclasses import dataclass, field

import torch
from fairseq.data import Dictionary
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from omegaconf import II

from segatron_fairseq.data.span_masking import MASK_SPAN_MODES, SpanMaskDataset
from segatron_fairseq.segments import MASK_SYMBOL
from segatron_fairseq.tasks.shards import first_shard
from segatron_fairseq.tasks.single_dictionary_task import load_corpus_dictionary, verify_data_field
from segatron_preprocess.corpus_format import BPE, METADATA_FILE, NO_BPE, WORDPIECE, read_metadata


@dataclass
class MaskingConfig(FairseqDataclass):
    """The corpus and BERT's masking (80% <mask>, 10% unchanged, 10% random)."""

    data: str = field(default="???", metadata={"help": "segatron-preprocess output directory"})
    mask_prob: float = field(default=0.15, metadata={"help": "probability of masking a token"})
    leave_unmasked_prob: float = field(default=0.1, metadata={"help": "of those, kept unchanged"})
    random_token_prob: float = field(default=0.1, metadata={"help": "of those, replaced at random"})
    mask_span: ChoiceEnum(MASK_SPAN_MODES) = field(
        default="token", metadata={"help": "token: BERT's (fairseq's MaskTokensDataset); span: SpanBERT's spans of "
                                   "whole words, Geo(--span-geometric-p) long up to --max-span-length words; "
                                   "sentence (ours): whole sentences; span and sentence decide 80/10/10 per span"})
    span_geometric_p: float = field(default=0.2, metadata={"help": "p of the span lengths' geometric distribution"})
    max_span_length: int = field(default=10, metadata={"help": "longest span, in words"})
    verify_data: bool = verify_data_field()
    seed: int = II("common.seed")


def load_dictionary_with_mask(data: str, source: str = "the data of a masked-LM task") -> Dictionary:
    """``data``'s dict.txt plus ``<mask>`` as its last symbol."""
    return load_corpus_dictionary(data, source, MASK_SYMBOL)


def whole_word_starts(data: str, dictionary: Dictionary, option: str = "--mask-whole-words") -> torch.Tensor:
    """(len(dictionary),) uint8, 1 for symbols that begin a word: every symbol
    when the corpus ``data`` (its first shard) was binarized without sub-words, sentencepiece pieces
    starting with ▁, WordPiece pieces not starting with ## (and the special
    symbols) otherwise. ``option``: the option that needs them (errors name it)."""
    directory = first_shard(data)
    metadata = read_metadata(directory)
    if not metadata:
        raise ValueError(f"{option}: {os.path.join(directory, METADATA_FILE)} is missing, so it is unknown "
                         f"whether the symbols of {directory} are words or sentencepiece pieces; binarize the corpus "
                         f"with segatron-preprocess")
    if metadata.get(BPE, NO_BPE) == NO_BPE:
        return torch.ones(len(dictionary), dtype=torch.uint8)
    if metadata[BPE] == WORDPIECE:
        starts = [not dictionary[i].startswith("##") for i in range(len(dictionary))]
    else:
        starts = [i < dictionary.nspecial or dictionary[i].startswith("\u2581") or dictionary[i] == MASK_SYMBOL
                  for i in range(len(dictionary))]
    return torch.tensor(starts, dtype=torch.uint8)


def span_mask_dataset(examples, dictionary: Dictionary, mask_idx: int, cfg: MaskingConfig) -> SpanMaskDataset:
    """``cfg.mask_span`` (span or sentence) masking of ``examples``, in whole
    words of ``cfg.data``'s symbols."""
    return SpanMaskDataset(examples, dictionary, mask_idx, cfg.seed, cfg.mask_span, cfg.mask_prob,
                           cfg.leave_unmasked_prob, cfg.random_token_prob, cfg.span_geometric_p, cfg.max_span_length,
                           whole_word_starts(cfg.data, dictionary, f"--mask-span {cfg.mask_span}"))
