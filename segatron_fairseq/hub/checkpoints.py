"""The one loader of the hub interfaces' checkpoints: the three
``from_pretrained`` and ``cross-thought-rank`` read a checkpoint here and
nowhere else.

``load_checkpoint`` reads the file once (``read_checkpoint``) and checks,
before it builds the model:

- that the file exists (``OSError``) and is a whole fairseq
  checkpoint (``ValueError``: not a regular file, empty, truncated, not
  fairseq's, a configuration that builds a model far larger than its tensors,
  parameters missing or extra);
- that it holds the registered model the caller serves (``segatron_xl``,
  ``segabert``, ``cross_thought``), not another one;
- that the corpus given for raw text (a segatron-preprocess directory: its
  dictionary, sub-words and splitter) has as many symbols as the checkpoint
  embeds.

The corpus takes the place of the checkpoint's ``data``, or of its
``pretrain_data`` when it was fine-tuned (the task's own files stay). A model
listed in ``CORPUS_TASKS`` gets that task on the corpus instead of the
checkpoint's own: Cross-Thought's hub needs only the corpus's dictionary and
sub-words, and a fine-tuned checkpoint's task would read its fine-tuning files.
"""
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional

from fairseq import checkpoint_utils, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf, overwrite_args_by_name
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_REGISTRY

from segatron_fairseq.segments import MASK_SYMBOL, SEP_SYMBOL
from segatron_preprocess.corpus_format import DICT_FILE

DEFAULT_CHECKPOINT = "checkpoint_best.pt"  # fairseq-train's best checkpoint
# what each model's hub interface offers, for the error on a checkpoint of another model
HUB_USES = {"segatron_xl": "Segatron-XL scoring and generation", "segabert": "SegaBERT features and predictions",
            "cross_thought": "Cross-Thought embeddings and ranking", "cloze_two_tower": "cloze scores",
            "xlnet": "segatron-predict on XLNet"}
# model -> the registered task its hub sets up on the corpus, whatever task the checkpoint was trained with
CORPUS_TASKS = {"cross_thought": "cross_thought_mlm"}
# model -> the model whose hub serves its checkpoints (ELECTRA's: its discriminator is a SegaBERT encoder)
SERVED_AS = {"segabert_electra": "segabert"}


@dataclass
class LoadedCheckpoint:
    """A checkpoint's configuration, its task (set up with ``corpus``), its model, and the corpus."""

    cfg: Any
    task: Any
    model: Any
    corpus: str


def _saved_name(state: dict, group: str, legacy_option: str) -> Optional[str]:
    """The ``_name`` of the checkpoint's ``group`` configuration (``model``,
    ``task``), or its legacy argparse ``legacy_option``."""
    cfg = state.get("cfg") or {}
    group_cfg = cfg.get(group) if hasattr(cfg, "get") else None
    name = getattr(group_cfg, "_name", None) or (group_cfg.get("_name") if hasattr(group_cfg, "get") else None)
    if name is None and state.get("args") is not None:
        name = getattr(state["args"], legacy_option, None)
    return name


def checkpoint_model_name(state: dict) -> str:
    """The registered model name (not the architecture) a fairseq checkpoint was saved from."""
    name = _saved_name(state, "model", "arch")
    return ARCH_MODEL_NAME_REGISTRY.get(name, name) or "unknown"


def served_model_name(state: dict) -> str:
    """The model whose hub serves a fairseq checkpoint (``SERVED_AS``, else its own)."""
    name = checkpoint_model_name(state)
    return SERVED_AS.get(name, name)


def checkpoint_task_name(state: dict) -> str:
    """The registered task a fairseq checkpoint was trained with."""
    return _saved_name(state, "task", "task") or "unknown"


# ``path`` is a regular file, checked without opening it (``FileNotFoundError``; ``ValueError``: a directory, a FIFO)
check_checkpoint_file = checkpoint_utils.check_checkpoint_path


def read_checkpoint(path: str) -> Dict:
    """The contents of the fairseq checkpoint at ``path`` (fairseq's
    ``load_checkpoint_to_cpu``, which loads no code and names the file when it
    cannot read it); a missing file is an ``OSError``, a file that is not a
    fairseq checkpoint a ``ValueError`` naming it."""
    try:
        return checkpoint_utils.load_checkpoint_to_cpu(path)
    except KeyError as err:
        raise ValueError(f"{path}: not a fairseq checkpoint (it has no {err})") from None


def embedded_symbols(model_name: str, model_state: Dict) -> Optional[int]:
    """Rows of the token embedding of a checkpoint of the registered model
    ``model_name`` (its class's ``embedded_symbols``), or None when it has none."""
    model_class = MODEL_REGISTRY.get(model_name)
    return model_class.embedded_symbols(model_state) if model_class is not None else None


def _override(state: Dict, overrides: Dict) -> None:
    """``overrides`` in the checkpoint's configuration, as fairseq's
    ``load_checkpoint_to_cpu`` applies them."""
    if state.get("args") is not None:
        for name, value in overrides.items():
            setattr(state["args"], name, value)
    if state.get("cfg") is not None:
        overwrite_args_by_name(state["cfg"], overrides)


def load_checkpoint(path: str, model: str, corpus: str, overrides: Optional[Dict] = None,
                    corpus_option: str = "data_name_or_path", state: Optional[Dict] = None) -> LoadedCheckpoint:
    """The ``model`` checkpoint at ``path`` with its task set up on ``corpus``
    (see the module doc); ``overrides`` change its configuration;
    ``corpus_option`` is how the caller's user named the corpus, for errors;
    ``state``: the file's contents when the caller has read them (``read_checkpoint``)."""
    if state is None:
        state = read_checkpoint(path)
    name = checkpoint_model_name(state)
    if model not in (name, SERVED_AS.get(name, name)):
        raise ValueError(f"{path}: this is a {name} checkpoint; {HUB_USES[model]} need a {model} one")
    task_cfg = state["cfg"]["task"] if state.get("cfg") is not None else vars(state["args"])
    overrides = {"pretrain_data" if "pretrain_data" in task_cfg else "data": corpus, **(overrides or {})}
    _override(state, overrides)
    cfg = convert_namespace_to_omegaconf(state["args"]) if state.get("args") is not None else state["cfg"]
    if model in CORPUS_TASKS:
        task_name = CORPUS_TASKS[model]
        task = tasks.TASK_REGISTRY[task_name].setup_task(tasks.TASK_DATACLASS_REGISTRY[task_name](data=corpus))
    else:
        task = tasks.setup_task(cfg.task)
    rows, dictionary = embedded_symbols(name, state["model"]), task.source_dictionary
    if rows is not None and rows != len(dictionary):
        appended = [symbol for symbol in (MASK_SYMBOL, SEP_SYMBOL) if symbol in dictionary.indices]
        with_appended = f" (with {', '.join(appended)})" if appended else ""
        raise ValueError(f"{os.path.join(corpus, DICT_FILE)} has {len(dictionary):,} symbols{with_appended} but {path} "
                         f"embeds {rows:,}: {corpus_option} is not the corpus this model was trained on")
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides, task=task,
                                                                      state=state)
    return LoadedCheckpoint(cfg, task, models[0], corpus)


class PretrainedHub:
    """A hub interface's ``from_pretrained`` (what each model's ``from_pretrained`` returns): a checkpoint of the
    registered model ``MODEL`` loaded by ``load_pretrained``, then ``from_loaded``."""

    MODEL: str

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str], data_name_or_path: str,
                        overrides: Dict):
        loaded = load_pretrained(cls.MODEL, model_name_or_path, checkpoint_file or DEFAULT_CHECKPOINT,
                                 data_name_or_path, overrides)
        return cls.from_loaded(loaded)

    @classmethod
    def from_loaded(cls, loaded: LoadedCheckpoint):
        """The interface of a loaded checkpoint (its configuration, task, model and corpus)."""
        return cls(loaded.cfg, loaded.task, loaded.model, loaded.corpus)


def load_pretrained(model: str, model_name_or_path: str, checkpoint_file: str, data_name_or_path: str,
                    overrides: Dict) -> LoadedCheckpoint:
    """What ``from_pretrained`` loads: ``model_name_or_path/checkpoint_file``,
    with the corpus ``data_name_or_path`` (relative to the model directory
    when it starts with '.': fairseq's ``hub_utils.from_pretrained`` rule).
    fairseq's archive handling (``file_utils.load_archive_file``) is left
    out: given a path that is not a directory it extracts it as a tarball
    and deletes the file."""
    corpus = data_name_or_path
    if corpus.startswith("."):
        corpus = os.path.abspath(os.path.join(model_name_or_path, corpus))
    return load_checkpoint(os.path.join(model_name_or_path, checkpoint_file), model, corpus, overrides)
