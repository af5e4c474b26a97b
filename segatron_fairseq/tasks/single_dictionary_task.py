"""Base of the plugin's tasks: one fairseq dictionary serves as both the
source and the target vocabulary; a task whose samples only its own criterion
reads names it (``CRITERION``), and any other is refused when it is built; a
task whose samples only some registered models read names them (``MODELS``),
and another model is refused before it is built (from a checkpoint: one line
from fairseq's tools, as for a checkpoint of another dictionary). The task's
and the model's options are checked against the minimums their dataclass
fields declare (``min`` metadata: ``OptionValueError``, one line
from fairseq's tools).
``load_corpus_dictionary`` is how every task reads a corpus's dictionary
(of ``DIR1:DIR2:...``, the first shard's, after checking that the shards
agree: ``shards.py``), ``split_directory`` the shard a split is read from;
``verify_data_field`` the option of the tasks that read binarized splits."""
import logging
import os
from dataclasses import field
from typing import Optional, Tuple

from fairseq.checkpoint_utils import CheckpointFileError
from fairseq.data import Dictionary
from fairseq.dataclass.utils import check_field_bounds
from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import FairseqTask

from segatron_fairseq.tasks.registry_aliases import registered_name
from segatron_fairseq.tasks.shards import check_shards_agree, data_shards, first_shard, shard_index
from segatron_preprocess.corpus_format import DICT_FILE

logger = logging.getLogger(__name__)


def load_corpus_dictionary(data: str, source: str, *appended: str) -> Dictionary:
    """The dict.txt of the segatron-preprocess directory ``data`` (of the
    first of its shards ``DIR1:DIR2:...``, which must agree) with the symbols
    ``appended`` added at its end; ``source``: the option that named ``data``
    (the error says it)."""
    for directory in data_shards(data):
        path = os.path.join(directory, DICT_FILE)
        if not os.path.isfile(path):
            if not os.path.lexists(directory):
                problem = f"{directory}: no such directory"
            elif not os.path.isdir(directory):
                problem = f"{directory}: a file, not a directory"
            else:
                problem = f"{path} not found"
            raise FileNotFoundError(f"{problem}: {source} must be a segatron-preprocess directory")
    check_shards_agree(data, source)
    dictionary = Dictionary.load(os.path.join(first_shard(data), DICT_FILE))
    for symbol in appended:
        dictionary.add_symbol(symbol)
    return dictionary


def verify_data_field():
    """``--verify-data``: a pre-training task's config field."""
    return field(default=False, metadata={
        "help": "rehash each split's files whole when it is loaded and compare them with the sha256 its manifest "
                "records (loading checks sampled blocks only)"})


class SingleDictionaryTask(FairseqTask):
    CRITERION: Optional[str] = None  # the registered criterion this task needs, when no other fits its samples
    MODELS: Tuple[str, ...] = ()  # the registered models this task's samples fit, when not every model does

    def split_directory(self, split: str, epoch: int = 1) -> str:
        """The directory of ``--data`` that ``split`` is read from at ``epoch``: with shards
        ``DIR1:DIR2:...``, the training split's shard of the epoch, the first for any other (logged)."""
        shards = data_shards(self.cfg.data)
        k = shard_index(len(shards), split, epoch, getattr(self.cfg, "train_subset", "train"))
        if len(shards) > 1:
            logger.info(f"{split}: epoch {epoch} reads shard {k + 1} of {len(shards)}, {shards[k]}")
        return shards[k]

    def open_split(self, split: str, epoch: int = 1):
        """The binarized ``split`` of ``--data`` at ``epoch`` (a ``SegmentIndexedDataset``; ``split_directory``
        says which shard), checked against its manifest (with ``--verify-data``: its files rehashed whole)."""
        from segatron_fairseq.data import SegmentIndexedDataset

        return SegmentIndexedDataset(os.path.join(self.split_directory(split, epoch), split), len(self.dictionary),
                                     self.cfg.verify_data)

    def __init__(self, cfg, dictionary: Dictionary):
        check_field_bounds(getattr(type(self), "__dataclass", None), cfg)
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
        if self.CRITERION is not None and registered_name("criterion", name) != self.CRITERION:
            raise ValueError(f"--task {getattr(self.cfg, '_name', type(self).__name__)} needs --criterion "
                             f"{self.CRITERION}, not {name}")
        return super().build_criterion(cfg)

    def build_model(self, cfg, from_checkpoint=False):
        arch = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
        model_class = ARCH_MODEL_REGISTRY.get(arch) or MODEL_REGISTRY.get(arch)
        fits = [MODEL_REGISTRY[name] for name in self.MODELS]
        if fits and model_class is not None and not issubclass(model_class, tuple(fits)):
            task = getattr(self.cfg, "_name", None) or type(self).__name__
            reads = f"--task {task} reads {' and '.join(self.MODELS)} models"
            if from_checkpoint:
                raise CheckpointFileError(f"the checkpoint holds a {arch} model ({model_class.__name__}), but {reads}; "
                                          f"pass the --task it was trained with")
            raise ValueError(f"--arch {arch}: {reads}, not {model_class.__name__}")
        check_field_bounds(getattr(model_class, "__dataclass", None), cfg)
        return super().build_model(cfg, from_checkpoint)

    def max_positions(self):
        return None  # no task-level limit; models and datasets set their own
