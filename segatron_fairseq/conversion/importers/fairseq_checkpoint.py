"""Write an imported model as fairseq writes a trained one: ``dict.txt`` and a
checkpoint whose ``cfg`` is what ``fairseq-train`` would have recorded for the
given arguments, loadable by ``fairseq-eval-lm`` and ``from_pretrained``."""
import contextlib
import copy
import os
from typing import Dict, Iterator, List, Tuple

import torch
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf
from torch import Tensor

from segatron_fairseq import PLUGIN_DIR
from segatron_preprocess.atomic import atomic_path, atomic_paths
from segatron_preprocess.corpus_format import DICT_FILE


def write_checkpoint(directory: str, dictionary: Dictionary, task: str, arguments: List[str],
                     state_dict: Dict[str, Tensor], name: str = "checkpoint.pt") -> str:
    """``directory``/dict.txt and ``directory``/``name``; the model is built from
    ``arguments`` (fairseq-train's, with ``--task task``) and must take
    ``state_dict`` exactly (every key, every shape). Returns the checkpoint's path.
    Both files are written beside their places and renamed in when complete
    (``_staged``); a failed or stopped run leaves nothing of its own behind."""
    with _staged(directory, name) as (dict_path, path):
        dictionary.save(dict_path)
        parser = options.get_training_parser()
        args = options.parse_args_and_arch(parser, [os.path.abspath(directory), "--user-dir", PLUGIN_DIR,
                                                    "--task", task, *arguments])
        cfg = convert_namespace_to_omegaconf(args)
        staged_task = copy.deepcopy(cfg.task)
        staged_task.data = os.path.dirname(dict_path)  # the task reads dict.txt there until the rename
        model = tasks.setup_task(staged_task).build_model(cfg.model)
        model.load_state_dict(state_dict, strict=True)
        state = {"cfg": OmegaConf.to_container(cfg), "args": None, "model": model.state_dict(), "extra_state": {},
                 "optimizer_history": [{"criterion_name": "imported", "optimizer_name": "none",
                                        "lr_scheduler_state": {}, "num_updates": 0}]}
        torch.save(state, path)
    return os.path.join(directory, name)


@contextlib.contextmanager
def _staged(directory: str, name: str) -> Iterator[Tuple[str, str]]:
    """Where to write dict.txt and ``name`` of ``directory``: a new directory is
    written whole beside its place and renamed into place (the folders made
    above it are removed when that fails); into an existing one (which holds
    neither file) the two files are renamed together."""
    if os.path.isdir(directory):
        with atomic_paths([os.path.join(directory, DICT_FILE), os.path.join(directory, name)]) as (dict_path, path):
            yield dict_path, path
        return
    parent = os.path.dirname(os.path.abspath(directory))
    created = [folder for folder in _parents(parent) if not os.path.isdir(folder)]
    try:
        os.makedirs(parent, exist_ok=True)
        with atomic_path(directory) as staging:
            os.mkdir(staging)
            yield os.path.join(staging, DICT_FILE), os.path.join(staging, name)
    except BaseException:
        for folder in created:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise


def _parents(directory: str) -> List[str]:
    """``directory`` and the folders above it, innermost first."""
    path, found = os.path.abspath(directory), []
    while path != os.path.dirname(path):
        found.append(path)
        path = os.path.dirname(path)
    return found
