"""Task ``xlnet_plm``: XLNet's permutation language modelling over the output
of ``segatron-preprocess`` (``data/permutation_lm.py``: samples, targets,
orders and masks).

Each batch is ``batch_size`` rows of ``tokens_per_sample`` positions; row b of
batch k + 1 starts ``reuse_len`` positions after row b of batch k, so the
model's memory (the reuse part of each sample) continues the stream, as in
XLNet's data. Batches are never shuffled; the memory is reset at the start of
each training epoch and each validation. The targets and orders are drawn per
(seed, epoch, batch); a validation split uses the same ones at every
evaluation (epoch 1's), so its perplexities compare.
"""
import logging
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq.dataclass import FairseqDataclass
from fairseq.dataclass.utils import OptionValueError
from fairseq.distributed import utils as distributed_utils
from fairseq.tasks import register_task
from omegaconf import II

from segatron_fairseq.data import PermutationLMDataset
from segatron_fairseq.tasks.masking import whole_word_starts
from segatron_fairseq.tasks.segatron_lm import SegatronLMTask
from segatron_fairseq.tasks.single_dictionary_task import verify_data_field

logger = logging.getLogger(__name__)


@dataclass
class XLNetPLMConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "segatron-preprocess output directory"})
    tokens_per_sample: int = field(default=512, metadata={"help": "positions per sample (XLNet: 512)", "min": 1})
    reuse_len: int = field(default=256, metadata={
        "help": "the sample's first positions, cached as memory for the next sample, which starts there; they "
                "cannot see the rest (XLNet: 256)", "min": 1})
    partial_prediction_k: int = field(default=6, metadata={
        "help": "K: round(tokens_per_sample / K) targets per sample, the last 1/K of each order (XLNet: 6, "
                "85 targets of 512)", "min": 1})
    perm_size: Optional[int] = field(default=None, metadata={
        "help": "positions permuted together (XLNet's perm_size; default: each part whole)"})
    max_gram: int = field(default=5, metadata={"help": "longest target span, in tokens (XLNet: 5)", "min": 1})
    mask_alpha: int = field(default=6, metadata={"help": "a span of n tokens has n * alpha / beta of context "
                                                         "(XLNet: 6)"})
    mask_beta: int = field(default=1, metadata={"help": "see --mask-alpha (XLNet: 1)", "min": 1})
    verify_data: bool = verify_data_field()
    batch_size: Optional[int] = II("dataset.batch_size")
    batch_size_valid: Optional[int] = II("dataset.batch_size_valid")
    train_subset: str = II("dataset.train_subset")
    seed: int = II("common.seed")


@register_task("xlnet_plm", dataclass=XLNetPLMConfig)
class XLNetPLMTask(SegatronLMTask):
    CRITERION = "xlnet_plm"
    MODELS = ("xlnet",)

    def __init__(self, cfg: XLNetPLMConfig, dictionary):
        super().__init__(cfg, dictionary)
        if cfg.reuse_len > cfg.tokens_per_sample:
            raise OptionValueError(f"--reuse-len {cfg.reuse_len}: must not exceed --tokens-per-sample "
                             f"{cfg.tokens_per_sample}")
        parts = (cfg.reuse_len, cfg.tokens_per_sample - cfg.reuse_len)
        if cfg.perm_size is not None and (cfg.perm_size < 1 or any(part % cfg.perm_size for part in parts)):
            raise OptionValueError(f"--perm-size {cfg.perm_size}: must divide both parts of a sample, the reuse part "
                             f"({parts[0]}) and the rest ({parts[1]})")
        self.num_predict = max(1, round(cfg.tokens_per_sample / cfg.partial_prediction_k))

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        corpus = self.open_split(split, epoch)
        num_shards, shard_id = 1, 0
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            num_shards = distributed_utils.get_data_parallel_world_size()
            shard_id = distributed_utils.get_data_parallel_rank()
        word_starts = whole_word_starts(self.cfg.data, self.dictionary, "--task xlnet_plm").bool().numpy()
        cfg = self.cfg
        dataset = PermutationLMDataset(
            corpus, self.dictionary.eos(), self.dictionary.pad(), self._rows(split), cfg.tokens_per_sample,
            cfg.reuse_len, self.num_predict, cfg.seed, cfg.perm_size, word_starts,
            vary_by_epoch=split == cfg.train_subset, num_shards=num_shards, shard_id=shard_id,
            max_gram=cfg.max_gram, alpha=cfg.mask_alpha, beta=cfg.mask_beta)
        self.datasets[split] = dataset
        logger.info(f"{split}: {dataset.num_tokens_total:,} tokens, {dataset.batch_size} rows x "
                    f"{dataset.row_len:,} per shard, {len(dataset)} batches of {cfg.tokens_per_sample} "
                    f"(stride {cfg.reuse_len}), {self.num_predict} targets per sample")

    def build_generator(self, *args, **kwargs):
        raise NotImplementedError("--task xlnet_plm does not generate")
