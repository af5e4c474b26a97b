"""Task ``segabert_mlm``: SegaBERT masked-LM pre-training on document examples.

Reads ``segatron-preprocess`` output; examples come from
``DocumentExampleDataset`` (whole sentences of one document, no NSP), masking
from fairseq's ``MaskTokensDataset`` (deterministic per seed, epoch and
index), the loss from fairseq's ``masked_lm`` criterion. With ``--mask-span
span|sentence`` the masking is ``SpanMaskDataset``'s (SpanBERT's spans, or our
whole sentences), and ``--span-boundary-objective`` adds SpanBERT's span
boundary head to the model (criterion ``span_boundary_mlm``). With
``--sentence-order-prediction``, ALBERT's SOP examples (``tasks.sentence_order``)
and the ``masked_lm_sop`` criterion. Each batch also
counts the examples whose segment indexes had to be shifted or clipped to fit
the embedding tables; they are logged as ``index_shifted`` / ``index_clipped``.
"""
import logging
from dataclasses import dataclass, field

from fairseq import metrics
from fairseq.data import (
    Dictionary,
    IdDataset,
    MaskTokensDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RightPadDataset,
)
from fairseq.dataclass.utils import OptionValueError
from fairseq.tasks import register_task

from segatron_fairseq.data import (
    DocumentExampleDataset,
    FieldDataset,
    SentenceOrderDataset,
    SumDataset,
)
from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.span_boundary_head import SpanBoundaryHead
from segatron_fairseq.segments import MASK_SYMBOL, TABLE_SIZES
from segatron_fairseq.tasks.masking import (
    MaskingConfig,
    load_dictionary_with_mask,
    span_mask_dataset,
    whole_word_starts,
)
from segatron_fairseq.tasks.sentence_order import register_sentence_order_head, sentence_order_fields
from segatron_fairseq.tasks.single_dictionary_task import SingleDictionaryTask

logger = logging.getLogger(__name__)


@dataclass
class SegaBERTMLMConfig(MaskingConfig):
    tokens_per_sample: int = field(default=512, metadata={"help": "example length with [CLS] and [SEP]",
                                                          "min": 3})
    examples_per_epoch: int = field(default=0, metadata={"help": "0: about one pass over the tokens"})
    mask_whole_words: bool = field(default=False, metadata={"help": "mask whole words (sentencepiece ▁)"})
    max_paragraph_index: int = field(default=TABLE_SIZES["paragraph"],
                                     metadata={"help": "paragraph index table size"})
    max_sentence_index: int = field(default=TABLE_SIZES["sentence"],
                                    metadata={"help": "sentence index table size"})
    max_token_index: int = field(default=TABLE_SIZES["token"], metadata={"help": "token index table size"})
    span_boundary_objective: bool = field(default=False, metadata={
        "help": "SpanBERT's span boundary objective: a head predicting each masked token from its span's boundary "
                "outputs (needs --mask-span span|sentence and --criterion span_boundary_mlm)"})
    sentence_order_prediction: bool = field(default=False, metadata={
        "help": "ALBERT's sentence-order prediction: examples [CLS] A [SEP] B [SEP], 50% swapped, and a "
                "sentence_order head (criterion masked_lm_sop)"})


SPAN_BOUNDARY_HEAD = "span_boundary"  # the head's name among the model's task heads


@register_task("segabert_mlm", dataclass=SegaBERTMLMConfig)
class SegaBERTMLMTask(SingleDictionaryTask):
    def __init__(self, cfg: SegaBERTMLMConfig, dictionary: Dictionary):
        super().__init__(cfg, dictionary)
        self.mask_idx = dictionary.index(MASK_SYMBOL)

    @classmethod
    def setup_task(cls, cfg: SegaBERTMLMConfig, **kwargs):
        dictionary = load_dictionary_with_mask(cfg.data)
        logger.info(f"dictionary: {len(dictionary)} types")
        if cfg.span_boundary_objective and cfg.mask_span == "token":
            logger.warning("--span-boundary-objective with --mask-span token: no spans, so no span boundary loss "
                           "(only the masked LM is scored)")
        return cls(cfg, dictionary)

    @property
    def index_limits(self):
        return {"paragraph": self.cfg.max_paragraph_index, "sentence": self.cfg.max_sentence_index,
                "token": self.cfg.max_token_index}

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        longest = model.max_positions()
        if longest is not None and longest < self.cfg.tokens_per_sample:
            raise OptionValueError(f"--max-positions {longest}: less than --tokens-per-sample "
                                   f"{self.cfg.tokens_per_sample}; the model must read a whole example")
        tables = model.index_tables() if isinstance(model, EncoderInterface) else {}
        for name, limit in self.index_limits.items():
            table = tables.get(name)
            if table is not None and table.num_embeddings < limit:
                raise ValueError(f"the model's {name} table has {table.num_embeddings} rows but the task "
                                 f"allows indexes up to {limit - 1} (--max-{name}-index)")
        if self.cfg.sentence_order_prediction:
            register_sentence_order_head(model)
        if self.cfg.span_boundary_objective:
            if not isinstance(model, EncoderInterface):
                raise ValueError(f"--span-boundary-objective needs a segabert model, not {type(model).__name__}")
            words = model.word_embeddings()
            model.register_task_head(SPAN_BOUNDARY_HEAD, SpanBoundaryHead(
                model.token_feature_dim, words.embedding_dim, words.num_embeddings, model.layer_norm_eps))
        return model

    def build_criterion(self, cfg):
        name = getattr(cfg, "_name", None)
        if self.cfg.span_boundary_objective and name != "span_boundary_mlm":
            raise ValueError(f"--span-boundary-objective needs --criterion span_boundary_mlm, not {name}")
        if self.cfg.sentence_order_prediction != (name == "masked_lm_sop"):
            raise ValueError(f"--sentence-order-prediction needs --criterion masked_lm_sop, not {name}"
                             if self.cfg.sentence_order_prediction else
                             "--criterion masked_lm_sop needs --sentence-order-prediction")
        return super().build_criterion(cfg)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        corpus = self.open_split(split, epoch)
        examples = (SentenceOrderDataset if self.cfg.sentence_order_prediction else DocumentExampleDataset)(
            corpus, self.dictionary.bos(), self.dictionary.eos(), self.cfg.tokens_per_sample, self.index_limits,
            self.cfg.seed, self.cfg.examples_per_epoch,
        )
        logger.info(f"{split}: {len(examples):,} examples from {len(examples.table.document_first):,} documents, "
                    f"{len(examples.table.starts):,} sentences")
        pad = self.dictionary.pad()
        spans = {}
        if self.cfg.mask_span == "token":
            # not MaskTokensDataset.apply_mask: its caches are keyed by the index alone, and an example changes
            # with the epoch (MaskTokensDataset's own cache is keyed by seed, epoch and index)
            whole_words = whole_word_starts(self.cfg.data, self.dictionary) if self.cfg.mask_whole_words else None
            source, target = (MaskTokensDataset(
                FieldDataset(examples, "tokens"), self.dictionary, pad_idx=pad, mask_idx=self.mask_idx,
                seed=self.cfg.seed, mask_prob=self.cfg.mask_prob, leave_unmasked_prob=self.cfg.leave_unmasked_prob,
                random_token_prob=self.cfg.random_token_prob, mask_whole_words=whole_words,
                return_masked_tokens=targets,
            ) for targets in (False, True))
        else:
            masked = span_mask_dataset(examples, self.dictionary, self.mask_idx, self.cfg)
            source, target = FieldDataset(masked, "source"), FieldDataset(masked, "target")
            spans = {name: RightPadDataset(FieldDataset(masked, name), pad_idx=-1 if name == "span_offset" else 0)
                     for name in ("span_left", "span_right", "span_offset")}
        sop_inputs, sop_fields = sentence_order_fields(examples) if self.cfg.sentence_order_prediction else ({}, {})
        self.datasets[split] = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(source, pad_idx=pad),
                    "src_lengths": NumelDataset(source, reduce=False),
                    **{f"{name}_index": RightPadDataset(FieldDataset(examples, name), pad_idx=0)
                       for name in self.index_limits},
                    **sop_inputs,
                },
                "target": RightPadDataset(target, pad_idx=pad),
                **spans,
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(source, reduce=True),
                "index_shifted": SumDataset(examples, "shifted"),
                "index_clipped": SumDataset(examples, "clipped"),
                **sop_fields,
            },
            sizes=[examples.sizes],
        )

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        loss, sample_size, logging_output = super().train_step(
            sample, model, criterion, optimizer, update_num, ignore_grad)
        logging_output["index_shifted"] = int(sample["index_shifted"])
        logging_output["index_clipped"] = int(sample["index_clipped"])
        return loss, sample_size, logging_output

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        for key in ("index_shifted", "index_clipped"):
            if any(key in log for log in logging_outputs):
                metrics.log_scalar_sum(key, sum(log.get(key, 0) for log in logging_outputs))

    def max_positions(self):
        return self.cfg.tokens_per_sample
