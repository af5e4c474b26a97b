"""Task ``token_labelling``: a label for every word (named entities,
CoNLL-2003) with SegaBERT, the BERT baseline, and their SpanBERT / ALBERT /
ELECTRA variants (ELECTRA fine-tunes its discriminator).

``data`` holds CoNLL files (``data/conll.py``): ``train.txt`` and
``valid.txt`` (``--train-file`` / ``--valid-file`` name others, e.g.
``eng.train`` / ``eng.testa``; split ``x`` is ``x.txt``). Each word is encoded
with the pre-training corpus's sub-words and labelled at its first sub-word;
documents are packed into windows of ``--max-positions`` with their segment
indexes (``data/token_windows.py``). The model gets a head
(``--token-head``: ``linear`` or the cloze paper's ``bilstm_crf``,
``models/token_label_heads.py``) named ``--classification-head-name``; its
parameters carry ``param_group = "head"``, so fairseq's ``composite``
optimizer trains them at their own learning rate (the yaml
``segabert_ner``). The criterion is ``token_labelling``: the head's loss
per word, and at validation seqeval's span F1 over the whole set.
``segatron-predict ner`` writes a checkpoint's labels in CoNLL format.

Any model of ``models.encoder_interface`` that gives ``token_features`` (as
``SegaBERTModel``, ``XLNetModel`` and ``ClozeTwoTowerModel``) can be
fine-tuned here. A model whose inputs end with another symbol than
``</s>`` says so by its ``input_end_symbol`` (the cloze model: ``<s>``, as
its pre-training blocks ``<s> ... <s>``); the windows end with it. One that
counts its indexes from its input's first token says so by
``indexes_from_input_start`` (the cloze model); each window does so too.
"""
import logging
import os
from dataclasses import dataclass, field
from typing import List

from fairseq.dataclass import ChoiceEnum
from fairseq.tasks import register_task

from segatron_fairseq.data.conll import ConllFile, read_conll
from segatron_fairseq.data.token_windows import NO_LABEL, EncodedSentence, TokenWindowDataset, document_windows
from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.token_label_heads import TOKEN_HEADS, build_token_head
from segatron_fairseq.segments import TABLE_SIZES
from segatron_fairseq.tasks.finetuning_task import FinetuningConfig, FinetuningTask

logger = logging.getLogger(__name__)

CONLL_2003_LABELS = "O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC"
HEAD_GROUP = "head"  # the param_group of the head's parameters (the encoder's: fairseq's "default")


@dataclass
class TokenLabellingConfig(FinetuningConfig):
    data: str = field(default="???", metadata={"help": "directory of the CoNLL files"})
    train_file: str = field(default="train.txt", metadata={"help": "the file read as split 'train'"})
    valid_file: str = field(default="valid.txt", metadata={"help": "the file read as split 'valid'"})
    labels: str = field(default=CONLL_2003_LABELS, metadata={"help": "comma separated labels (default: "
                                                                     "CoNLL-2003's, IOB)"})
    max_positions: int = field(default=512, metadata={"help": "window length, [CLS]/[SEP] included"})
    token_head: ChoiceEnum(TOKEN_HEADS) = field(default="linear", metadata={
        "help": "linear (BERT's) or bilstm_crf (the cloze paper's projection + biLSTM + CRF)"})
    head_dropout: float = field(default=0.1, metadata={"help": "dropout before the head's layers"})
    head_projection_dim: int = field(default=256, metadata={"help": "bilstm_crf: the projection's width"})
    head_lstm_dim: int = field(default=256, metadata={"help": "bilstm_crf: the biLSTM's units each way"})
    classification_head_name: str = field(default="token_labelling_head")


@register_task("token_labelling", dataclass=TokenLabellingConfig)
class TokenLabellingTask(FinetuningTask):
    CRITERION = "token_labelling"

    def __init__(self, cfg: TokenLabellingConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.window_end = dictionary.eos()  # the model's input_end_symbol once the model is built
        self.indexes_from_window_start = False  # the model's indexes_from_input_start once it is built
        self.labels = tuple(label.strip() for label in cfg.labels.split(","))
        if "" in self.labels or len(set(self.labels)) != len(self.labels):
            raise ValueError(f"--labels {cfg.labels}: needs distinct, non-empty labels separated by commas")
        if cfg.max_positions < 3:
            raise ValueError(f"--max-positions {cfg.max_positions}: a window needs at least 3 positions "
                             "([CLS] word [SEP])")
        for option in ("head_projection_dim", "head_lstm_dim"):
            if getattr(cfg, option) < 1:
                raise ValueError(f"--{option.replace('_', '-')} {getattr(cfg, option)}: must be at least 1")
        if not 0 <= cfg.head_dropout < 1:
            raise ValueError(f"--head-dropout {cfg.head_dropout}: must be in [0, 1)")

    def split_path(self, split: str) -> str:
        name = {"train": self.cfg.train_file, "valid": self.cfg.valid_file}.get(split, f"{split}.txt")
        return os.path.join(self.cfg.data, name)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs):
        conll = read_conll(self.split_path(split))
        if not conll.labelled:
            raise ValueError(f"{conll.path}: one column (words alone); fine-tuning needs each word's label in the "
                             "last column")
        self.datasets[split] = self.windows_dataset(conll)
        logger.info(f"{split}: {len(conll.documents):,} documents, {len(conll.sentences):,} sentences, "
                    f"{len(self.datasets[split]):,} windows from {conll.path}")

    def windows_dataset(self, conll: ConllFile, with_targets: bool = True) -> TokenWindowDataset:
        """The windows of every document of ``conll``; ``with_targets``: the
        label indexes of a labelled file (each label must be one of ``--labels``)."""
        bos, eos, unk = self.dictionary.bos(), self.window_end, self.dictionary.unk()
        windows, number = [], 0
        for document in conll.documents:
            encoded = []
            for sentence in document:
                targets = [NO_LABEL] * len(sentence.words)
                if with_targets and conll.labelled:
                    targets = [self.target(label, conll.path, line)
                               for label, line in zip(sentence.labels, sentence.lines)]
                encoded.append(EncodedSentence([self.encode(word) or [unk] for word in sentence.words],
                                               targets, number))
                number += 1
            windows.extend(document_windows(encoded, bos, eos, self.cfg.max_positions, TABLE_SIZES,
                                            self.indexes_from_window_start))
        return TokenWindowDataset(windows, self.dictionary.pad())

    def target(self, label: str, path: str, line: int) -> int:
        if label not in self.labels:
            raise ValueError(f"{path}:{line}: label {label!r} is not one of --labels {','.join(self.labels)}")
        return self.labels.index(label)

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if not isinstance(model, EncoderInterface):
            raise ValueError(f"--task token_labelling: the model {type(model).__name__} gives no per-token features "
                             f"(it is no models.encoder_interface.EncoderInterface)")
        head = build_token_head(self.cfg.token_head, model.token_feature_dim, len(self.labels),
                                self.cfg.head_dropout, self.cfg.head_projection_dim, self.cfg.head_lstm_dim)
        for parameter in head.parameters():
            parameter.param_group = HEAD_GROUP
        model.register_task_head(self.cfg.classification_head_name, head)
        self.window_end = self.dictionary.index(model.input_end_symbol)
        self.indexes_from_window_start = model.indexes_from_input_start
        return model

    def label_names(self, indexes: List[int]) -> List[str]:
        return [self.labels[k] for k in indexes]

    def max_positions(self):
        return self.cfg.max_positions
