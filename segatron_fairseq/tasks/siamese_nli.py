"""Task ``siamese_nli`` (alias ``segabert_siamese_nli``): S-SegaBERT, SegaBERT
fine-tuned as a siamese network on NLI pairs (Sentence-BERT's recipe, which
the paper follows).

One encoder reads each sentence alone (``data/siamese_pair_dataset.py``);
u and v are its pooled last layer (``--pooling``, mean by default); a
``SiameseHead`` classifies concat(u, v, |u - v|) into the NLI labels. The files
are ``text_classification``'s TSVs, by default three columns
(sentence1, sentence2, label) as ``scripts/prepare_nli.py`` writes them from
SNLI and MNLI; the criterion is ``siamese_nli``. Evaluate the encoder
with ``segatron-sts``, which takes the pooling recorded here.
"""
import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from segatron_fairseq.data.siamese_pair_dataset import SiamesePairDataset
from segatron_fairseq.evaluation.sentence_embeddings import POOLINGS
from segatron_fairseq.models.sentence_pair_head import SiameseHead
from segatron_fairseq.tasks.indexed_sentence_prediction import (
    IndexedSentencePredictionConfig,
    IndexedSentencePredictionTask,
)
from segatron_fairseq.tasks.registry_aliases import register_alias
from segatron_fairseq.tasks.text_classification import TextClassificationTask

logger = logging.getLogger(__name__)


@dataclass
class SiameseNLIConfig(IndexedSentencePredictionConfig):
    text_columns: str = field(default="0,1", metadata={"help": "0-based columns of the two sentences"})
    label_column: int = field(default=2, metadata={"help": "0-based label column"})
    labels: str = field(default="contradiction,entailment,neutral", metadata={"help": "comma separated"})
    regression_target: bool = False  # its criterion, siamese_nli, classifies
    pooling: str = field(default="mean", metadata={"help": f"sentence embedding: one of {POOLINGS}"})
    classification_head_name: str = field(default="siamese_nli_head")


@register_task("siamese_nli", dataclass=SiameseNLIConfig)
class SiameseNLITask(IndexedSentencePredictionTask):
    CRITERION = "siamese_nli"

    @classmethod
    def setup_task(cls, cfg: SiameseNLIConfig, **kwargs):
        if cfg.pooling not in POOLINGS:
            raise ValueError(f"--pooling {cfg.pooling}: choose from {POOLINGS}")
        return super().setup_task(cfg, **kwargs)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        path, texts, targets = self.read_split(split)
        if any(len(pair) != 2 for pair in texts):
            raise ValueError(f"{path}: a siamese task needs two text columns (--text-columns)")
        first = self.examples_dataset([[a] for a, _ in texts], targets)
        second = self.examples_dataset([[b] for _, b in texts], targets)
        self.datasets[split] = SiamesePairDataset(first, second, targets)
        logger.info(f"{split}: {len(texts):,} pairs from {path}")

    def build_model(self, cfg, from_checkpoint=False):
        # the model without text_classification's [CLS] head: the siamese head instead
        model = super(TextClassificationTask, self).build_model(cfg, from_checkpoint)
        model.register_task_head(self.cfg.classification_head_name,
                                 SiameseHead(model.token_feature_dim, self.num_classes))
        return model


register_alias("task", "segabert_siamese_nli", "siamese_nli")
