"""The files of a Hugging Face model directory (``save_pretrained``'s)."""
import json
import os
from typing import Dict, Tuple

from fairseq.checkpoint_utils import load_checkpoint_file
from torch import Tensor

from segatron_preprocess.inputs import read_utf8

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def find_file(directory: str, names: Tuple[str, ...], what: str) -> str:
    """The first of ``names`` present in ``directory``."""
    for name in names:
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"{directory}: no {what} ({' or '.join(names)})")


def read_json(path: str, required: Tuple[str, ...] = ()) -> Dict:
    """The JSON object in ``path``, which must have the keys ``required``."""
    try:
        config = json.loads(read_utf8(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: not a JSON object")
    missing = [key for key in required if key not in config]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)}")
    return config


def read_config(directory: str, model_type: str, required: Tuple[str, ...] = ()) -> Tuple[str, Dict]:
    """``config.json`` (its path and contents, which must have the keys
    ``required``); its ``model_type``, when it has one, must be ``model_type``
    (older configs, like the Segatron authors', have none)."""
    path = find_file(directory, ("config.json",), "configuration")
    config = read_json(path, required)
    if config.get("model_type", model_type) != model_type:
        raise ValueError(f"{path}: model_type is {config['model_type']!r}, not {model_type!r}")
    return path, config


def read_weights(directory: str) -> Tuple[str, Dict[str, Tensor]]:
    """The state dict of ``model.safetensors``, or of ``pytorch_model.bin``
    (``weights_only``) when there is none (its path and tensors). A
    safetensors file that is damaged (truncated, a header that is not JSON,
    too long, or whose shapes do not match its data) is a ``ValueError``
    naming it."""
    path = find_file(directory, WEIGHT_FILES, "weights")
    if path.endswith(".safetensors"):
        from safetensors import SafetensorError
        from safetensors.torch import load_file
        try:
            return path, load_file(path)
        except SafetensorError as err:
            raise ValueError(f"{path}: not a whole safetensors file ({err})") from None
    return path, load_checkpoint_file(path)
