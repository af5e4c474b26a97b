"""A model's named presets, registered as fairseq architectures by one rule.

``--arch {prefix}_{name}`` fills the model's options in two steps, each only
where the user (or a yaml) gave no value or None:

1. the preset's fields; a field whose value is a function takes it from the
   config as filled so far (e.g. an initial scale from the width);
2. every other field its default: a dataclass model's config defaults (a
   checkpoint saved with ``--arch`` by an older version lacks the newer
   fields), or what an argparse model's defaults function sets (RoBERTa's
   ``base_architecture`` at the end).

``fixed`` fields are set whatever the user gave (Transformer-XL never has
segment parts).
"""
from dataclasses import fields, is_dataclass
from typing import Any, Callable, Mapping, Optional, Union

from fairseq.models import register_model_architecture

Preset = Mapping[str, Any]
# a dataclass model's config class, or a function filling an argparse model's options
Defaults = Union[type, Callable[[Any], None]]

# the width of the tiny encoders (SegaBERT, ELECTRA, Cross-Thought) of the demo and the tests
TINY_ENCODER = dict(encoder_layers=2, encoder_embed_dim=64, encoder_ffn_embed_dim=128, encoder_attention_heads=4)


def set_defaults(cfg, **defaults) -> None:
    """``cfg.name = value`` for each name that ``cfg`` lacks or holds None."""
    for name, value in defaults.items():
        if getattr(cfg, name, None) is None:
            setattr(cfg, name, value)


def apply_preset(cfg, preset: Preset, defaults: Defaults, fixed: Optional[Preset] = None) -> None:
    """Fill ``cfg`` (a Namespace or DictConfig) with ``fixed``, ``preset``,
    then ``defaults`` (the module doc)."""
    for name, value in (fixed or {}).items():
        setattr(cfg, name, value)
    set_defaults(cfg, **{name: value for name, value in preset.items() if not callable(value)})
    set_defaults(cfg, **{name: value(cfg) for name, value in preset.items() if callable(value)})
    if is_dataclass(defaults):
        set_defaults(cfg, **{f.name: getattr(defaults, f.name) for f in fields(defaults) if f.name != "_name"})
    else:
        defaults(cfg)


def register_presets(model_name: str, presets: Mapping[str, Preset], defaults: Defaults,
                     prefix: Optional[str] = None, fixed: Optional[Preset] = None,
                     alias_prefix: Optional[str] = None) -> None:
    """Register each preset ``name`` of ``presets`` as the architecture
    ``{prefix}_{name}`` of model ``model_name`` (``prefix``: the model's
    name), applying ``apply_preset``; with ``alias_prefix``, the same function
    as ``{alias_prefix}_{name}`` too (an older name, for its checkpoints and
    yamls)."""
    for name, preset in presets.items():
        def architecture(cfg, preset=preset):
            apply_preset(cfg, preset, defaults, fixed)

        arch = f"{prefix or model_name}_{name}"
        architecture.__name__ = architecture.__qualname__ = arch
        architecture.__module__ = defaults.__module__
        for registered in [arch] + ([f"{alias_prefix}_{name}"] if alias_prefix else []):
            register_model_architecture(model_name, registered)(architecture)
