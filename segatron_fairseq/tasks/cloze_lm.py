"""Task ``cloze_lm``: pre-training of the cloze two-tower model
(``cloze_two_tower``) on the output of ``segatron-preprocess``.

Examples are ``ClozeBlockDataset`` blocks (``--tokens-per-sample`` with the
two ``<s>``; across sentences and paragraphs, within a document), in an
order drawn once from ``--seed``; every token is a target. The loss is the ``cloze_lm`` criterion's (``--cloze-loss
cloze|bilm|cloze+bilm``); ``fairseq-validate`` reports the held-out cloze
perplexity (``cloze_ppl``).
"""
import logging
from dataclasses import dataclass, field

import numpy as np
from fairseq.data import (
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import register_task
from omegaconf import II

from segatron_fairseq.data import ClozeBlockDataset, FieldDataset
from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.segments import TABLE_SIZES
from segatron_fairseq.tasks.shards import first_shard
from segatron_fairseq.tasks.single_dictionary_task import (
    SingleDictionaryTask,
    load_corpus_dictionary,
    verify_data_field,
)
from segatron_preprocess.corpus_format import INDEX_NAMES, STREAM_STYLE, read_metadata

logger = logging.getLogger(__name__)


@dataclass
class ClozeLMConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "segatron-preprocess output directory"})
    tokens_per_sample: int = field(default=512, metadata={"help": "block length with its two <s>"})
    max_paragraph_index: int = field(default=TABLE_SIZES["paragraph"],
                                     metadata={"help": "paragraph indexes are fitted to this many rows"})
    max_sentence_index: int = field(default=TABLE_SIZES["sentence"],
                                    metadata={"help": "sentence indexes are fitted to this many rows"})
    verify_data: bool = verify_data_field()
    seed: int = II("common.seed")


@register_task("cloze_lm", dataclass=ClozeLMConfig)
class ClozeLMTask(SingleDictionaryTask):
    CRITERION = "cloze_lm"

    @classmethod
    def setup_task(cls, cfg: ClozeLMConfig, **kwargs):
        dictionary = load_corpus_dictionary(cfg.data, "the data of --task cloze_lm")
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    @property
    def index_limits(self):
        return {"paragraph": self.cfg.max_paragraph_index, "sentence": self.cfg.max_sentence_index,
                "token": self.cfg.tokens_per_sample}

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        longest = model.max_positions()
        if longest is not None and self.cfg.tokens_per_sample > longest:
            raise ValueError(f"--tokens-per-sample {self.cfg.tokens_per_sample} exceeds the model's longest input "
                             f"{longest} (--max-target-positions)")
        tables = model.index_tables() if isinstance(model, EncoderInterface) else {}
        for name in tables:
            limit, rows = self.index_limits[name], tables[name].num_embeddings
            if rows < limit:
                raise ValueError(f"the model's {name} table has {rows} rows but the task allows indexes up to "
                                 f"{limit - 1} (--max-{name}-index)")
        return model

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        corpus = self.open_split(split, epoch)
        directory = first_shard(self.cfg.data)  # binarized as every shard
        if read_metadata(directory).get(STREAM_STYLE) == "authors":
            raise ValueError(f"{directory}: binarized with --stream-style authors (paragraph counters that run "
                             f"over the whole split, no document starts): cloze blocks stay within documents; "
                             f"binarize with --stream-style fairseq")
        d = self.dictionary
        blocks = ClozeBlockDataset(corpus, d.bos(), d.eos(), d.pad(), self.cfg.tokens_per_sample,
                                   self.index_limits)
        logger.info(f"{split}: {len(blocks):,} blocks of up to {self.cfg.tokens_per_sample} tokens from "
                    f"{blocks.documents:,} documents")
        tokens = FieldDataset(blocks, "tokens")
        examples = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(tokens, pad_idx=d.pad()),
                    "src_lengths": NumelDataset(tokens, reduce=False),
                    **{f"{name}_index": RightPadDataset(FieldDataset(blocks, name), pad_idx=0)
                       for name in INDEX_NAMES},
                },
                "target": RightPadDataset(FieldDataset(blocks, "target"), pad_idx=d.pad()),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(tokens, reduce=True),
            },
            sizes=[blocks.sizes],
        )
        with data_utils.numpy_seed(self.cfg.seed):
            order = np.random.permutation(len(blocks))
        self.datasets[split] = SortDataset(examples, sort_order=[order])

    def max_positions(self):
        return self.cfg.tokens_per_sample
