"""Base of the plugin's tasks: one fairseq dictionary serves as both the
source and the target vocabulary."""
from fairseq.data import Dictionary
from fairseq.tasks import FairseqTask


class SingleDictionaryTask(FairseqTask):
    def __init__(self, cfg, dictionary: Dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary

    def max_positions(self):
        return None  # no task-level limit; models and datasets set their own
