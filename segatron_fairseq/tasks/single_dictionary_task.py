"""Base of the plugin's tasks: one fairseq dictionary serves as both the
source and the target vocabulary; a task whose samples only its own criterion
reads names it (``CRITERION``), and any other is refused when it is built.
``load_corpus_dictionary`` is how every task reads a corpus's dictionary."""
import os
from typing import Optional

from fairseq.data import Dictionary
from fairseq.tasks import FairseqTask

from segatron_preprocess.corpus_format import DICT_FILE


def load_corpus_dictionary(data: str, source: str, *appended: str) -> Dictionary:
    """The dict.txt of the segatron-preprocess directory ``data`` with the
    symbols ``appended`` added at its end; ``source``: the option that named
    ``data`` (the error says it)."""
    path = os.path.join(data, DICT_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: {source} must be a segatron-preprocess directory")
    dictionary = Dictionary.load(path)
    for symbol in appended:
        dictionary.add_symbol(symbol)
    return dictionary


class SingleDictionaryTask(FairseqTask):
    CRITERION: Optional[str] = None  # the registered criterion this task needs, when no other fits its samples

    def __init__(self, cfg, dictionary: Dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary

    def build_criterion(self, cfg):
        name = getattr(cfg, "_name", None)
        if self.CRITERION is not None and name != self.CRITERION:
            raise ValueError(f"--task {getattr(self.cfg, '_name', type(self).__name__)} needs --criterion "
                             f"{self.CRITERION}, not {name}")
        return super().build_criterion(cfg)

    def max_positions(self):
        return None  # no task-level limit; models and datasets set their own
