"""What an export says about itself: a model card (``README.md``, opening
with the metadata block the Hugging Face hub reads) and, for the causal
language models, ``generation_config.json``.

The card is made from the directory's ``config.json`` (its class, remote code
or not: the pipeline tag, the tags, how to load it) and from the checkpoint
it came from (``CheckpointFacts``: the model, task and data, the main training
settings, and the held-out figure when the checkpoint has one)::

    ---
    library_name: transformers
    pipeline_tag: text-generation
    tags: [segatron-fairseq, fairseq, segatron_xl, custom_code]
    ---
    # segatron_xl (segatron_xl_wt103_base), exported by segatron-fairseq
    ...
"""
import argparse
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .requirements import pip_command

# the tasks whose validation loss is a language model's cross-entropy (base 2, fairseq's) over its targets
LANGUAGE_MODEL_TASKS = ("segatron_lm", "xlnet_plm", "segabert_mlm", "cross_thought_mlm", "cloze_lm")
# pipeline tag by the ending of the exported class
PIPELINE_TAGS = (("ForMaskedLM", "fill-mask"), ("ForCausalLM", "text-generation"),
                 ("LMHeadModel", "text-generation"))
# the training settings a card lists: (section of the checkpoint's configuration, field, fairseq-train option)
# (a model's architecture is its configuration's _name, or arch in an argparse-made configuration)
SETTINGS = (("model", "_name", "--arch"), ("model", "arch", "--arch"), ("criterion", "_name", "--criterion"),
            ("optimizer", "_name", "--optimizer"),
            ("optimization", "lr", "--lr"), ("optimization", "max_update", "--max-update"),
            ("dataset", "batch_size", "--batch-size"), ("dataset", "max_tokens", "--max-tokens"),
            ("optimization", "update_freq", "--update-freq"), ("common", "seed", "--seed"))


@dataclass
class CheckpointFacts:
    """What a card says of the checkpoint an export came from."""

    path: str
    model: str  # the registered model
    task: str
    data: Optional[str]
    settings: List[Tuple[str, str]]  # (fairseq-train option, value) of SETTINGS the checkpoint sets
    val_loss: Optional[float]  # the last validation loss, base 2 (None: trained without validation)
    num_updates: Optional[int]
    # (option, value) that make --arch build the checkpoint's model: its fields off the architecture's defaults
    # (a yaml run's model: segatron_xl with its sizes); value "" for a flag
    model_options: List[Tuple[str, str]] = field(default_factory=list)
    unset_model_fields: List[str] = field(default_factory=list)  # fields off their defaults no option can give


def _section(cfg, name: str):
    section = cfg.get(name) if hasattr(cfg, "get") else getattr(cfg, name, None)
    return section if section is not None else {}


def _field(section, name: str):
    return section.get(name) if hasattr(section, "get") else getattr(section, name, None)


def _architecture_defaults(arch: str) -> Dict:
    """The model fields' values that ``--arch arch`` gives when no option sets them: the architecture's
    function applied to an empty namespace, then the registered model's dataclass defaults."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY, MODEL_DATACLASS_REGISTRY

    model_config = MODEL_DATACLASS_REGISTRY.get(ARCH_MODEL_NAME_REGISTRY.get(arch))
    defaults = vars(model_config()) if model_config is not None else {}
    namespace = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](namespace)
    return {**defaults, **vars(namespace)}


def _model_options(model_cfg, arch: Optional[str]) -> Tuple[List[Tuple[str, str]], List[str]]:
    """(options, fields no option gives) that rebuild ``model_cfg`` with ``--arch arch``: the fields that
    are options of the model (not those an architecture derives, as RoBERTa's max_source_positions)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    if arch not in ARCH_CONFIG_REGISTRY:
        return [], []
    defaults = _architecture_defaults(arch)
    parser = argparse.ArgumentParser()
    ARCH_MODEL_REGISTRY[arch].add_args(parser)
    items = model_cfg.items() if hasattr(model_cfg, "items") else vars(model_cfg).items()
    options, unset = [], []
    for name, value in items:
        option = "--" + name.replace("_", "-")
        if option not in parser._option_string_actions or name not in defaults or value == defaults[name]:
            continue
        if isinstance(value, bool) and value and not defaults[name]:
            options.append((option, ""))
        elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
            options.append((option, str(value)))
        else:
            unset.append(f"{name}={value}")
    return options, unset


def checkpoint_facts(path: str, state: dict, model: str, task: str) -> CheckpointFacts:
    """The facts of the fairseq checkpoint ``state`` read from ``path``
    (``model`` and ``task``: its registered model and task)."""
    cfg = state.get("cfg") or {}  # (a legacy argparse checkpoint has none: no settings listed)
    settings = []
    for section, name, option in SETTINGS:
        value = _field(_section(cfg, section), name)
        if value is not None and not isinstance(value, (str, int, float)) and len(value) == 1:
            value = value[0]  # fairseq's lists of one (--lr, --update-freq)
        if value is not None and option not in dict(settings) and not (option == "--update-freq" and value == 1):
            settings.append((option, str(value)))
    extra = state.get("extra_state") or {}
    val_loss = extra.get("val_loss")
    updates = None
    for _, key, _, meter in dict(extra.get("metrics") or {}).get("default", []):
        if key == "num_updates":
            updates = int(meter["val"])
    model_options, unset = _model_options(_section(cfg, "model"), dict(settings).get("--arch"))
    return CheckpointFacts(os.path.basename(path), model, task, _field(_section(cfg, "task"), "data"), settings,
                           None if val_loss is None else float(val_loss), updates, model_options, unset)


def _pipeline_tag(architecture: str) -> Optional[str]:
    return next((tag for ending, tag in PIPELINE_TAGS if architecture.endswith(ending)), None)


def _held_out(facts: CheckpointFacts) -> str:
    if facts.val_loss is None:
        return "The checkpoint holds no validation figure (it was trained with validation off)."
    figure = f"validation loss {facts.val_loss:.4f} (base 2)"
    if facts.task in LANGUAGE_MODEL_TASKS:
        figure += f", perplexity {2 ** facts.val_loss:.2f}" if facts.val_loss < 1000 else ", perplexity inf"
    at = f" after {facts.num_updates:,} updates" if facts.num_updates is not None else ""
    return f"Held out: {figure}{at}, the last validation of the checkpoint."


def model_card(config: Dict, facts: CheckpointFacts, packages: Sequence[str] = ()) -> str:
    """README.md of a directory whose config.json is ``config`` and whose Python files import ``packages``
    (``requirements.imported_packages``)."""
    architecture = (config.get("architectures") or [config.get("model_type", "model")])[0]
    remote = "auto_map" in config
    tag = _pipeline_tag(architecture)
    tags = ["segatron-fairseq", "fairseq", facts.model] + (["custom_code"] if remote else [])
    metadata = ["---", "library_name: transformers"] + ([f"pipeline_tag: {tag}"] if tag else []) + \
        [f"tags: [{', '.join(tags)}]", "---"]
    auto = {"fill-mask": "AutoModelForMaskedLM", "text-generation": "AutoModelForCausalLM"}.get(tag, "AutoModel")
    trust = ", trust_remote_code=True" if remote else ""
    arch = dict(facts.settings).get("--arch", facts.model)
    settings = []
    for option, value in facts.settings:
        settings.append(f"{option} {value}")
        if option == "--arch":
            settings += [f"{name} {value}".rstrip() for name, value in facts.model_options]
    command = " ".join(["fairseq-train", facts.data or "DATA", "--user-dir segatron_fairseq", "--task", facts.task,
                        *settings])
    unset = (f"Model fields off their defaults that no option above sets: {', '.join(facts.unset_model_fields)}."
             if facts.unset_model_fields else "")
    lines = metadata + [
        f"# {facts.model} ({arch}), exported by segatron-fairseq", "",
        f"`{architecture}` exported with `segatron-export hf` from the fairseq checkpoint `{facts.path}` of "
        f"segatron-fairseq's `{facts.model}` model" + (" (remote code: `trust_remote_code=True`)." if remote else "."),
        "", "```python", f"from transformers import {auto}",
        f'model = {auto}.from_pretrained("path/to/this/directory"{trust})', "```", "",
        "## Requirements", "",
        "torch and transformers (tested in 4.35.2 and 5.24)" +
        (f", and what the remote code imports: {', '.join(packages)}:" if packages else ":"), "",
        "```bash", pip_command(packages), "```", "",
        "## Training", "",
        f"Task `{facts.task}` on `{facts.data or 'unknown data'}`. The main settings of the checkpoint's "
        "configuration (fairseq keeps the configuration, not the command line):", "",
        "```bash", command, "```", "", *([unset, ""] if unset else []), _held_out(facts), "",
    ]
    return "\n".join(lines)


def generation_config(config: Dict) -> Optional[str]:
    """generation_config.json of a causal language model's config (None for other classes): its ids, and
    greedy decoding as fairseq's default, which transformers 5's text-generation pipeline would otherwise
    replace by sampling at temperature 0.7 (its defaults for what a model's generation config leaves unset)."""
    architecture = (config.get("architectures") or [""])[0]
    if _pipeline_tag(architecture) != "text-generation":
        return None
    settings = {name: config[name] for name in ("bos_token_id", "eos_token_id", "pad_token_id")
                if config.get(name) is not None}
    if config.get("model_type") == "segatron_xl":  # as segatron-fairseq's sampler, which never draws <pad> or <s>
        settings["suppress_tokens"] = [config["pad_token_id"], config["bos_token_id"]]
    settings["do_sample"] = False
    return json.dumps(settings, indent=2)


def card_files(config: Dict, facts: Optional[CheckpointFacts], packages: Sequence[str] = ()) -> Dict[str, str]:
    """README.md and, for a causal language model, generation_config.json (name -> text); none without facts.
    ``packages``: what the directory's Python files import (``requirements.imported_packages``)."""
    if facts is None:
        return {}
    files = {"README.md": model_card(config, facts, packages)}
    generation = generation_config(config)
    if generation is not None:
        files["generation_config.json"] = generation
    return files
