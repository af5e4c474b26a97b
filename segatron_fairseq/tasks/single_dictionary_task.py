"""Base of the plugin's tasks: one fairseq dictionary serves as both the
source and the target vocabulary; a task whose samples only its own criterion
reads names it (``CRITERION``), and any other is refused when it is built."""
from typing import Optional

from fairseq.data import Dictionary
from fairseq.tasks import FairseqTask


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
