"""Fine-tuned checkpoints that 0.2.0 saved (tests/data/README.md) load with today's code: 0.2.0 kept the
span, token-labelling and Cross-Thought pair heads in RoBERTa's ``classification_heads``; they load into
``task_heads`` and give the outputs 0.2.0 recorded on the same inputs (``finetuned_tiny-0.2.0.outputs.npz``)."""
from pathlib import Path

import numpy as np
import pytest
import torch

from segatron_fairseq.models.token_label_heads import word_features

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def recorded():
    with np.load(DATA / "finetuned_tiny-0.2.0.outputs.npz") as outputs:
        return {key: torch.from_numpy(value) for key, value in outputs.items()}


def _net_input(recorded, name):
    prefix = f"{name}.net_input."
    return {key[len(prefix):]: value for key, value in recorded.items() if key.startswith(prefix)}


def _load(checkpoint, head):
    """The model and configuration of ``checkpoint`` (its data directories: tests/data's), after checking that
    its 0.2.0 state dict holds ``head`` in ``classification_heads`` and today's model in ``task_heads``."""
    from fairseq import checkpoint_utils

    path = DATA / checkpoint
    saved = torch.load(path, map_location="cpu", weights_only=False)["model"]
    assert any(key.startswith(f"classification_heads.{head}.") for key in saved)
    models, cfg, _ = checkpoint_utils.load_model_ensemble_and_task(
        [str(path)], arg_overrides={"data": str(DATA), "pretrain_data": str(DATA / "binarized-0.1.0")})
    model = models[0].eval()
    assert head in model.task_heads and head not in model.classification_heads
    assert not any(key.startswith("classification_heads.") for key in model.state_dict())
    return model, cfg


def test_squad_span_head_of_0_2_0_gives_its_logits(recorded):
    model, cfg = _load("segabert_squad_tiny-0.2.0.pt", "squad_span_head")
    assert cfg.task._name == "segabert_squad"  # 0.2.0's name, today an alias of extractive_qa
    assert cfg.criterion._name == "segabert_squad"
    with torch.no_grad():
        logits, _ = model(**_net_input(recorded, "squad"), features_only=True,
                          classification_head_name="squad_span_head")  # (B, T, 2): start, end
    torch.testing.assert_close(logits, recorded["squad.logits"], rtol=0, atol=1e-6)


def test_token_labelling_crf_head_of_0_2_0_gives_its_emissions_and_paths(recorded):
    model, cfg = _load("segabert_ner_tiny-0.2.0.pt", "token_labelling_head")
    assert cfg.task._name == "token_labelling" and cfg.task.token_head == "bilstm_crf"
    head = model.task_head("token_labelling_head")
    mask = recorded["ner.word_mask"]
    with torch.no_grad():
        features = word_features(model.token_features(**_net_input(recorded, "ner")),
                                 recorded["ner.word_positions"])  # (B, W, d)
        emissions = head(features, mask)  # (B, W, labels)
        paths = head.decode(features, mask)
    torch.testing.assert_close(emissions, recorded["ner.emissions"], rtol=0, atol=1e-6)
    assert [path + [-1] * (mask.size(1) - len(path)) for path in paths] == recorded["ner.paths"].tolist()


def test_cross_thought_flattening_pair_classifier_of_0_2_0_gives_its_logits(recorded):
    model, cfg = _load("cross_thought_pairs_tiny-0.2.0.pt", "sentence_classification_head")
    assert cfg.task._name == "cross_thought_pair_classification" and cfg.model.pair_pooling == "flatten"
    with torch.no_grad():
        logits, _ = model(**_net_input(recorded, "pairs"),
                          classification_head_name="sentence_classification_head")  # (B, 2 classes)
    torch.testing.assert_close(logits, recorded["pairs.logits"], rtol=0, atol=1e-6)
