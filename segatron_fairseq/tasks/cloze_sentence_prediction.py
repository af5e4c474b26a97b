"""Task ``cloze_sentence_prediction``: GLUE-style fine-tuning of the cloze
two-tower model (``cloze_two_tower``) as Baevski et al. (2019) do.

The files and labels are those of ``text_classification`` (``--glue-task``,
or the column options). Each example is laid out as the paper's:

    one text:  <s> a_1 .. a_n <s>
    two texts: <s> a_1 .. a_n <sep> b_1 .. b_m <s>

``<s>`` is the boundary symbol of pre-training (``cloze_lm`` blocks) and
``<sep>`` the paper's new separator, appended to the pre-training corpus's
dictionary here (its row is added to a pre-trained checkpoint's table when it
is loaded: ``ClozeTwoTowerModel._upgrade_for_finetuning``). The indexes are
SegaBERT's fine-tuning layout (``layout_of_paragraphs``: text k in paragraph k,
sentence 0, token indexes counted in each text, each boundary taking its left
neighbour's), for models pre-trained with ``--segment-positions`` or
``--token-positions sentence``. The model gets the paper's head
(``ClozeClassificationHead``: the outputs at the two ``<s>``, and at
``<sep>`` for pairs); the criterion is ``sentence_prediction_metrics``. Load
the pre-trained model with ``--restore-file`` (and the ``--reset-*`` flags).
"""
import logging
from dataclasses import dataclass, field
from typing import List

from fairseq.data import Dictionary
from fairseq.tasks import register_task

from segatron_fairseq.data.sentence_prediction_dataset import SentencePredictionDataset
from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerModel
from segatron_fairseq.segments import SEP_SYMBOL, layout_of_paragraphs
from segatron_fairseq.tasks.finetuning_task import FinetuningTask
from segatron_fairseq.tasks.single_dictionary_task import load_corpus_dictionary
from segatron_fairseq.tasks.text_classification import TextClassificationConfig, TextClassificationTask

logger = logging.getLogger(__name__)


@dataclass
class ClozeSentencePredictionConfig(TextClassificationConfig):
    max_positions: int = field(default=512, metadata={"help": "longest example, <s> and <sep> included"})


@register_task("cloze_sentence_prediction", dataclass=ClozeSentencePredictionConfig)
class ClozeSentencePredictionTask(TextClassificationTask):
    @staticmethod
    def pretraining_dictionary(cfg: ClozeSentencePredictionConfig) -> Dictionary:
        """The pre-training corpus's dict.txt with ``<sep>`` appended (no
        ``<mask>``: the cloze model never reads one)."""
        return load_corpus_dictionary(cfg.pretrain_data, "--pretrain-data", SEP_SYMBOL)

    def __init__(self, cfg: ClozeSentencePredictionConfig, dictionary, fmt):
        super().__init__(cfg, dictionary, fmt)
        if len(fmt.text_columns) > 2:
            raise ValueError(f"--text-columns {cfg.text_columns}: the cloze model's layout takes one text or a pair")

    @property
    def boundaries(self) -> int:
        """The head's boundary outputs: the two ``<s>``, and ``<sep>`` between two texts."""
        return len(self.format.text_columns) + 1

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        path, texts, targets = self.read_split(split)
        self.datasets[split] = self.examples_dataset(texts, targets)
        logger.info(f"{split}: {len(texts):,} examples from {path}")

    def encode_text(self, text: str) -> List[int]:
        """A text's ids; a literal ``<sep>`` in it is ``<unk>`` (only the layout places separators)."""
        separator, unk = self.dictionary.index(SEP_SYMBOL), self.dictionary.unk()
        return [unk if i == separator else i for i in self.encode(text)]

    def examples_dataset(self, texts: List[List[str]], targets: list) -> SentencePredictionDataset:
        """The dataset of examples given as their texts (one or two each) and targets."""
        bos, separator = self.dictionary.bos(), self.dictionary.index(SEP_SYMBOL)
        examples = []
        for example in texts:
            tokens, *indexes = layout_of_paragraphs([self.encode_text(t) for t in example], bos, separator,
                                                    self.cfg.max_positions, self.cfg.max_positions)
            tokens[-1] = bos  # <s> a <sep> b <sep> -> <s> a <sep> b <s>
            examples.append((tokens, *indexes))
        return SentencePredictionDataset(examples, targets, self.dictionary.pad(), regression=self.labels is None)

    def build_model(self, cfg, from_checkpoint=False):
        model = FinetuningTask.build_model(self, cfg, from_checkpoint)
        if not isinstance(model, ClozeTwoTowerModel):
            raise ValueError(f"--task cloze_sentence_prediction fine-tunes cloze_two_tower models, not "
                             f"{type(model).__name__} (use indexed_sentence_prediction)")
        model.register_classification_head(self.cfg.classification_head_name, num_classes=self.num_classes,
                                           boundaries=self.boundaries)
        return model

    def max_positions(self):
        return self.cfg.max_positions
