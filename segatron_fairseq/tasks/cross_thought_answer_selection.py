"""Task ``cross_thought_answer_selection``: pick the answer to a question
among candidates by Cross-Thought's cross-sequence attention (Eq. 10).

``{split}.jsonl`` in ``data`` holds JSON lines ``{"question", "candidates",
"answer"}``; each example is encoded as M = 1 + K short sequences (question
first), every candidate once and cut to ``--max-sequence-length`` on its own
(never dropped; 100 candidates as in the paper's pools are fine, and the
model's ``--encoder-chunk-sequences`` bounds the encoder's memory); the
criterion ``cross_thought_answer_selection``
minimises -log alpha[0][answer] and reports Recall@1, Recall@k and MRR.
Texts are tokenized like the pre-training corpus (``pretrain_data``).
"""
import logging
import os
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from segatron_fairseq.data.answer_selection import read_answer_selection
from segatron_fairseq.data.sequence_pair_dataset import SequenceGroupDataset
from segatron_fairseq.tasks.finetuning_task import FinetuningConfig, FinetuningTask
from segatron_fairseq.tasks.per_sequence_sizes import PerSequenceSizeCheck

logger = logging.getLogger(__name__)


@dataclass
class CrossThoughtAnswerSelectionConfig(FinetuningConfig):
    data: str = field(default="???", metadata={"help": "directory with train.jsonl, valid.jsonl"})
    max_sequence_length: int = field(default=64, metadata={"help": "tokens kept of each text"})
    recall_k: int = field(default=5, metadata={"help": "k of the reported Recall@k"})


@register_task("cross_thought_answer_selection", dataclass=CrossThoughtAnswerSelectionConfig)
class CrossThoughtAnswerSelectionTask(PerSequenceSizeCheck, FinetuningTask):
    CRITERION = "cross_thought_answer_selection"

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        path = os.path.join(self.cfg.data, f"{split}.jsonl")
        examples = read_answer_selection(path)
        dataset = SequenceGroupDataset(
            [[self.encode(q)] + [self.encode(c) for c in candidates] for q, candidates, _ in examples],
            [answer for _, _, answer in examples], self.dictionary.pad(), self.cfg.max_sequence_length,
        )
        self.datasets[split] = dataset
        counts = [len(c) for _, c, _ in examples]
        logger.info(f"{split}: {len(examples):,} questions, {sum(counts):,} candidates ({min(counts)} to "
                    f"{max(counts)} per question) from {path}; {dataset.truncated:,} texts cut to "
                    f"--max-sequence-length {self.cfg.max_sequence_length}")
