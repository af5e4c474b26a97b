"""How the plugin's architectures fill in a model's options: a value the user
(or a yaml) gave stays, a missing or None one takes the architecture's."""
from typing import Callable

from fairseq.models import register_model_architecture

# the width of the tiny encoders (SegaBERT, Cross-Thought) used by the demo and the tests
TINY_ENCODER = dict(encoder_layers=2, encoder_embed_dim=64, encoder_ffn_embed_dim=128, encoder_attention_heads=4)


def set_defaults(cfg, **defaults) -> None:
    """``cfg.name = value`` for each name that ``cfg`` lacks or holds None."""
    for name, value in defaults.items():
        if getattr(cfg, name, None) is None:
            setattr(cfg, name, value)


def register_architecture(model_name: str, arch_name: str, apply: Callable, *args) -> None:
    """Register ``arch_name`` of ``model_name`` as ``apply(cfg, *args)``."""
    def architecture(cfg):
        apply(cfg, *args)

    architecture.__name__ = architecture.__qualname__ = arch_name
    architecture.__module__ = apply.__module__
    register_model_architecture(model_name, arch_name)(architecture)
