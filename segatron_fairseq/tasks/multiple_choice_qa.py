"""Task ``multiple_choice_qa`` (alias ``segabert_multiple_choice``): RACE with
SegaBERT, the BERT baseline (``--arch segabert_bert_*``) or XLNet.

``data`` is the official RACE directory: split ``train`` reads
``train/{middle,high}/*.txt``, ``valid`` reads ``dev/``, any other split its
own directory (``test``). Each option is laid out with its question and the
article as ``data/multiple_choice_dataset.py`` draws it (query p = 0,
article paragraphs p = 1.., sentences by the pre-training corpus's
splitter). The model scores each option with a classification head of one
output (``--classification-head-name``); the criterion
``multiple_choice_qa`` reports accuracy for middle, high and all.
"""
import logging
import os
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from segatron_fairseq.data.multiple_choice_dataset import MultipleChoiceDataset, option_layout
from segatron_fairseq.data.race import RACE_LEVELS, read_race
from segatron_fairseq.data.span_windows import ContextTokenizer
from segatron_fairseq.segments import TABLE_SIZES, shorten_longest
from segatron_fairseq.tasks.finetuning_task import FinetuningConfig, FinetuningTask
from segatron_fairseq.tasks.registry_aliases import register_alias

logger = logging.getLogger(__name__)


@dataclass
class MultipleChoiceQAConfig(FinetuningConfig):
    data: str = field(default="???", metadata={"help": "the RACE directory (train/, dev/, test/)"})
    max_positions: int = field(default=512, metadata={"help": "longest input, [CLS]/[SEP] included"})
    max_query_tokens: int = field(default=128, metadata={"help": "question + option cut to this many tokens"})
    classification_head_name: str = field(default="multiple_choice_head")


@register_task("multiple_choice_qa", dataclass=MultipleChoiceQAConfig)
class MultipleChoiceQATask(FinetuningTask):
    CRITERION = "multiple_choice_qa"
    groups = RACE_LEVELS

    def __init__(self, cfg: MultipleChoiceQAConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.tokenize_context = ContextTokenizer(self.corpus, dictionary)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        directory = os.path.join(self.cfg.data, {"valid": "dev"}.get(split, split))
        questions = read_race(directory)
        bos, eos = self.dictionary.bos(), self.dictionary.eos()
        articles = {}
        examples = []
        for question in questions:
            if question.article not in articles:
                articles[question.article] = self.tokenize_context(question.article, first_paragraph=1)
            layouts = []
            for option in question.options:
                if "_" in question.question:
                    query = [self.encode(question.question.replace("_", option, 1))]
                else:
                    query = [self.encode(question.question), self.encode(option)]
                query = shorten_longest(query, self.cfg.max_query_tokens)
                layouts.append(option_layout(query, articles[question.article], bos, eos, self.cfg.max_positions,
                                             TABLE_SIZES))
            examples.append(layouts)
        self.datasets[split] = MultipleChoiceDataset(examples, [q.answer for q in questions],
                                                     [self.groups.index(q.level) for q in questions],
                                                     self.dictionary.pad())
        logger.info(f"{split}: {len(questions):,} questions from {directory} "
                    + ", ".join(f"{g} {sum(q.level == g for q in questions):,}" for g in self.groups))

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        model.register_classification_head(self.cfg.classification_head_name, num_classes=1)
        return model

    def max_positions(self):
        return self.cfg.max_positions



register_alias("task", "segabert_multiple_choice", "multiple_choice_qa")
