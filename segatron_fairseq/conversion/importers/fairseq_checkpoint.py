"""Write an imported model as fairseq writes a trained one: ``dict.txt`` and a
checkpoint whose ``cfg`` is what ``fairseq-train`` would have recorded for the
given arguments, loadable by ``fairseq-eval-lm`` and ``from_pretrained``."""
import contextlib
import os
from typing import Dict, List

import torch
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf
from torch import Tensor

from segatron_fairseq import PLUGIN_DIR
from segatron_preprocess.atomic import atomic_path
from segatron_preprocess.corpus_format import DICT_FILE


def write_checkpoint(directory: str, dictionary: Dictionary, task: str, arguments: List[str],
                     state_dict: Dict[str, Tensor], name: str = "checkpoint.pt") -> str:
    """``directory``/dict.txt and ``directory``/``name``; the model is built from
    ``arguments`` (fairseq-train's, with ``--task task``) and must take
    ``state_dict`` exactly (every key, every shape). Returns the checkpoint's path.
    When it fails, the files and folders it created are removed."""
    created = [parent for parent in _parents(directory) if not os.path.isdir(parent)]
    os.makedirs(directory, exist_ok=True)
    dict_path, path = os.path.join(directory, DICT_FILE), os.path.join(directory, name)
    written = [p for p in (dict_path, path) if not os.path.lexists(p)]
    try:
        with atomic_path(dict_path) as tmp:
            dictionary.save(tmp)
        parser = options.get_training_parser()
        args = options.parse_args_and_arch(parser, [os.path.abspath(directory), "--user-dir", PLUGIN_DIR,
                                                    "--task", task, *arguments])
        cfg = convert_namespace_to_omegaconf(args)
        model = tasks.setup_task(cfg.task).build_model(cfg.model)
        model.load_state_dict(state_dict, strict=True)
        state = {"cfg": OmegaConf.to_container(cfg), "args": None, "model": model.state_dict(), "extra_state": {},
                 "optimizer_history": [{"criterion_name": "imported", "optimizer_name": "none",
                                        "lr_scheduler_state": {}, "num_updates": 0}]}
        with atomic_path(path) as tmp:
            torch.save(state, tmp)
    except BaseException:  # a failed import leaves nothing of its own behind
        for new in written:
            if os.path.lexists(new):
                os.remove(new)
        for parent in created:
            with contextlib.suppress(OSError):
                os.rmdir(parent)
        raise
    return path


def _parents(directory: str) -> List[str]:
    """``directory`` and the folders above it, innermost first."""
    path, found = os.path.abspath(directory), []
    while path != os.path.dirname(path):
        found.append(path)
        path = os.path.dirname(path)
    return found
