"""Task ``extractive_qa`` (alias ``segabert_squad``): extractive reading
comprehension (SQuAD v1.1 / v2.0) with SegaBERT, the BERT baseline
(``--arch segabert_bert_*``) or XLNet.

``data`` holds the official JSON files: ``train-v1.1.json`` and
``dev-v1.1.json`` (``--squad-v2``: ``train-v2.0.json``, ``dev-v2.0.json``;
``--train-file`` / ``--valid-file`` name others; split ``x`` is ``x.json``).
Each question becomes one or more windows in the paper's layout
(``data/span_windows.py``: question p = 0, s = 0; context paragraphs
p = 1.., sentences from 0 in each, by the pre-training corpus's splitter).
The model gets a ``SpanHead`` named ``--classification-head-name``; the
criterion is ``extractive_qa``. ``segatron-predict squad`` writes the
official ``{id: answer}`` predictions of a fine-tuned checkpoint.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.tasks import register_task

from segatron_fairseq.data.span_windows import ContextTokenizer, SpanWindowDataset, answer_tokens, question_windows
from segatron_fairseq.data.squad_json import SquadQuestion, read_squad
from segatron_fairseq.models.answer_span_head import SpanHead
from segatron_fairseq.segments import TABLE_SIZES
from segatron_fairseq.tasks.finetuning_task import FinetuningConfig, FinetuningTask
from segatron_fairseq.tasks.registry_aliases import register_alias

logger = logging.getLogger(__name__)


@dataclass
class ExtractiveQAConfig(FinetuningConfig):
    data: str = field(default="???", metadata={"help": "directory of the SQuAD JSON files"})
    squad_v2: bool = field(default=False, metadata={"help": "SQuAD v2.0: unanswerable questions, no-answer score"})
    train_file: Optional[str] = field(default=None, metadata={"help": "default train-v1.1.json / train-v2.0.json"})
    valid_file: Optional[str] = field(default=None, metadata={"help": "default dev-v1.1.json / dev-v2.0.json"})
    max_positions: int = field(default=384, metadata={"help": "window length, [CLS]/[SEP] included"})
    doc_stride: int = field(default=128, metadata={"help": "context tokens between the starts of two windows"})
    max_query_tokens: int = field(default=64, metadata={"help": "questions are cut to this many tokens"})
    classification_head_name: str = field(default="squad_span_head")


@register_task("extractive_qa", dataclass=ExtractiveQAConfig)
class ExtractiveQATask(FinetuningTask):
    CRITERION = "extractive_qa"

    def __init__(self, cfg: ExtractiveQAConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.tokenize_context = ContextTokenizer(self.corpus, dictionary)

    def split_path(self, split: str) -> str:
        version = "2.0" if self.cfg.squad_v2 else "1.1"
        name = {"train": self.cfg.train_file or f"train-v{version}.json",
                "valid": self.cfg.valid_file or f"dev-v{version}.json"}.get(split, f"{split}.json")
        return os.path.join(self.cfg.data, name)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        path = self.split_path(split)
        questions = read_squad(path, require_answers=split == "train")
        self.datasets[split] = self.windows_dataset(path, questions)
        logger.info(f"{split}: {len(questions):,} questions, {len(self.datasets[split]):,} windows from {path}")

    def windows_dataset(self, path: str, questions: List[SquadQuestion]) -> SpanWindowDataset:
        if not self.cfg.squad_v2:
            impossible = [q.qid for q in questions if q.is_impossible]
            if impossible:
                raise ValueError(f"{path}: question {impossible[0]} (and {len(impossible) - 1} more) is_impossible: "
                                 f"a SQuAD v2.0 file needs --squad-v2")
        bos, eos = self.dictionary.bos(), self.dictionary.eos()
        contexts = {}
        windows = []
        for number, question in enumerate(questions):
            if question.context not in contexts:
                contexts[question.context] = self.tokenize_context(question.context, first_paragraph=1)
            context = contexts[question.context]
            answer = None
            if question.answer_start is not None:
                answer = answer_tokens(context, question.answer_start,
                                       question.answer_start + len(question.answers[0]))
            windows.extend(question_windows(number, self.encode(question.question), context, answer, bos, eos,
                                            self.cfg.max_positions, self.cfg.doc_stride, self.cfg.max_query_tokens,
                                            TABLE_SIZES))
        return SpanWindowDataset(windows, questions, self.dictionary.pad())

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        model.register_task_head(self.cfg.classification_head_name, SpanHead(model.token_feature_dim))
        return model

    def max_positions(self):
        return self.cfg.max_positions


register_alias("task", "segabert_squad", "extractive_qa")
