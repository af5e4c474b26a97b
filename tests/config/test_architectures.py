"""Every architecture the plugin registers fills a model's options as 0.2.0's
did. ``architectures-0.2.0.json`` holds, per architecture, what
``architecture_fields`` gave at 0.2.0: the namespace an empty config gets
(``empty``) and the fields that differ when the user gave ``GIVEN``
(``given``: the user's value kept, or a field the architecture always sets or
computes from others)."""
import argparse
import json
from pathlib import Path

import pytest
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

import segatron_fairseq  # noqa: F401  (registers the models and their architectures)

RECORDED = Path(__file__).with_name("architectures-0.2.0.json")
GIVEN = dict(encoder_embed_dim=32, decoder_embed_dim=32, encoder_layers=3, decoder_layers=3, no_sentence_part=False,
             no_paragraph_part=False, no_token_positional_embeddings=True, num_token_types=1)
# the names 0.3.0 gives architectures, and the 0.2.0 names they keep as aliases
RENAMED = {**{f"albert_{size}": f"segabert_bert_albert_{size}" for size in ("base", "large", "xlarge", "xxlarge")},
           **{f"electra_{size}": f"segabert_bert_electra_{size}" for size in ("small", "base", "tiny")}}


def plugin_architectures() -> list:
    return sorted(arch for arch, model in ARCH_MODEL_REGISTRY.items()
                  if model.__module__.startswith("segatron_fairseq."))


def _fields(arch: str, given: dict) -> dict:
    namespace = argparse.Namespace(**given)
    ARCH_CONFIG_REGISTRY[arch](namespace)
    return json.loads(json.dumps(vars(namespace), default=repr))


def architecture_fields(arch: str) -> dict:
    empty, given = _fields(arch, {}), _fields(arch, GIVEN)
    return {"empty": empty, "given": {name: value for name, value in given.items() if empty.get(name) != value}}


RECORDS = json.loads(RECORDED.read_text())


def test_every_architecture_is_registered_under_its_names():
    assert plugin_architectures() == sorted([*RECORDS, *RENAMED])


@pytest.mark.parametrize("arch", sorted(RECORDS))
def test_architecture_fills_a_config_as_before(arch):
    assert architecture_fields(arch) == RECORDS[arch]


@pytest.mark.parametrize("arch, alias", sorted(RENAMED.items()))
def test_renamed_architecture_is_its_alias(arch, alias):
    assert ARCH_CONFIG_REGISTRY[arch] is ARCH_CONFIG_REGISTRY[alias]
    assert ARCH_MODEL_REGISTRY[arch] is ARCH_MODEL_REGISTRY[alias]
    assert architecture_fields(arch) == RECORDS[alias]
