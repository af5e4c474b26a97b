"""Base of the fine-tuning tasks: labelled text files in ``data``, tokenized
as the pre-training corpus ``pretrain_data`` was (its dict.txt with
``<mask>``, and its sentencepiece.model when it has one; of shards
``DIR1:DIR2:...``, the first's). A task on top adds its file format, its
example layout and its options."""
from dataclasses import dataclass, field

from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.data.text_encoder import text_encoder
from segatron_fairseq.tasks.masking import load_dictionary_with_mask
from segatron_fairseq.tasks.shards import first_shard
from segatron_fairseq.tasks.single_dictionary_task import SingleDictionaryTask


@dataclass
class FinetuningConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "directory of the task's labelled files"})
    pretrain_data: str = field(default="???", metadata={"help": "the segatron-preprocess directory of "
                                                                "pre-training (dict.txt, sentencepiece.model)"})


class FinetuningTask(SingleDictionaryTask):
    def __init__(self, cfg: FinetuningConfig, dictionary):
        super().__init__(cfg, dictionary)
        self.corpus = first_shard(cfg.pretrain_data)  # the directory of the dictionary and sub-words
        self.encode = text_encoder(self.corpus, dictionary)  # str -> token ids

    @staticmethod
    def pretraining_dictionary(cfg: FinetuningConfig):
        return load_dictionary_with_mask(cfg.pretrain_data, "--pretrain-data")

    @classmethod
    def setup_task(cls, cfg: FinetuningConfig, **kwargs):
        return cls(cfg, cls.pretraining_dictionary(cfg))
