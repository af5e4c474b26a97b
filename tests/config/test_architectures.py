"""Every architecture the plugin registers fills a model's options as 0.2.0's
did. ``architectures-0.2.0.json`` holds, per architecture, what
``architecture_fields`` gave at 0.2.0: the namespace an empty config gets
(``empty``) and the fields that differ when the user gave ``GIVEN``
(``given``: the user's value kept, or a field the architecture always sets or
computes from others). Checkpoints 0.2.0 saved under the renamed
architectures' old names load and give 0.2.0's outputs."""
import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch
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


@pytest.mark.parametrize("name, arch", [("albert", "segabert_bert_albert_base"),
                                        ("electra", "segabert_bert_electra_tiny")])
def test_checkpoint_saved_under_an_old_name_loads_and_gives_its_features(name, arch):
    """tests/data's checkpoints of 0.2.0 saved with the old names (tests/data/README.md) load and give the
    features 0.2.0 gave them."""
    from fairseq import checkpoint_utils

    data = RECORDED.parents[1] / "data"
    models, cfg, _ = checkpoint_utils.load_model_ensemble_and_task(
        [str(data / f"{name}_tiny-0.2.0.pt")], arg_overrides={"data": str(data / "binarized-0.1.0")})
    assert cfg.model.arch == arch
    tokens = torch.tensor([[0, 5, 6, 7, 8, 9, 10, 11, 2], [0, 12, 13, 14, 2, 1, 1, 1, 1]])
    with torch.no_grad():
        features, _ = models[0].eval()(tokens, features_only=True)
    expected = np.load(data / "albert_electra_tiny-0.2.0.features.npz")[name]
    np.testing.assert_array_equal(features.numpy(), expected)
