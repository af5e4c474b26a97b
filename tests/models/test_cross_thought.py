"""Cross-Thought model: shapes, masks, positions, alpha, ranking from cached embeddings, pre-training."""
import argparse
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, binarized_training_text, fairseq_train
from fairseq.models import ARCH_CONFIG_REGISTRY
from tiny_models import as_options, dictionary, tiny_model

from segatron_fairseq.segments import MASK_SYMBOL

# one layer of width 32 over inputs of 40 positions (3 of them the special tokens')
SETTINGS = dict(encoder_layers=1, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=4,
                max_positions=40, num_special_tokens=3)


def build(**fields):
    """(model, dictionary): cross_thought_tiny with ``SETTINGS`` and config ``fields`` over 40 words and the mask
    symbol."""
    vocabulary = dictionary(MASK_SYMBOL, words=40)
    return tiny_model("cross_thought_tiny", *as_options(**fields), width=as_options(**SETTINGS),
                      vocabulary=vocabulary), vocabulary


def batch(dictionary, b=2, m=5, length=6):
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(dictionary.nspecial, len(dictionary) - 1, (b, m, length), generator=g)
    if b > 1 and m > 3:
        tokens[1, 3:] = dictionary.pad()  # sample 1 has only 3 sequences
    if m > 2:
        tokens[0, 2, 4:] = dictionary.pad()  # a shorter sequence
    return tokens


def test_shapes_and_alpha():
    model, d = build()
    model.eval()
    tokens = batch(d)
    logits, extra = model(tokens)
    assert logits.shape == (2, 5, 6, len(d))
    assert extra["sequence_embeddings"].shape == extra["cross_states"].shape == (2, 5, 3, 32)
    alpha = extra["cross_attention"]
    assert alpha.shape == (2, 5, 5)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 5))
    assert torch.all(alpha[1, :, 3:] == 0)  # missing sequences get no attention
    masked = tokens.ne(d.pad()) & (torch.rand(tokens.shape) < 0.5)
    assert model(tokens, masked_tokens=masked)[0].shape == (int(masked.sum()), len(d))


def test_alpha_is_equation_7_from_the_layer_projections():
    model, d = build(share_cross_layers=False)
    model.eval()
    tokens = batch(d, b=1, m=4)
    _, extra = model(tokens)
    embeddings = extra["sequence_embeddings"][0]  # (M, N, d)
    expected = torch.zeros(4, 4)
    for n in range(3):
        attention = model.encoder.cross_layers[n][0].attention
        q = attention.q_proj(embeddings[:, n]).view(4, 4, 8) * attention.scaling
        k = attention.k_proj(embeddings[:, n]).view(4, 4, 8)
        for h in range(4):
            expected += torch.softmax(q[:, h] @ k[:, h].T, dim=-1)
    torch.testing.assert_close(extra["cross_attention"][0], expected / 12)


def test_mask_self_zeroes_the_diagonal():
    model, d = build(cross_mask_self=True)
    model.eval()
    alpha = model(batch(d, b=1, m=4))[1]["cross_attention"][0]
    assert torch.all(alpha.diagonal() == 0)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(4))


def test_special_positions_fixed_and_word_positions_contiguous():
    model, d = build()
    seen = []
    model.encoder.positions.register_forward_hook(lambda module, args, out: seen.append(args[0].clone()))
    tokens = batch(d, b=3, m=2, length=6)
    model.train()
    model(tokens)
    model.eval()
    model(tokens)
    train_positions, eval_positions = seen
    assert torch.all(train_positions[:, :3] == torch.arange(3))
    words = train_positions[:, 3:]
    assert torch.all(words[:, 1:] - words[:, :-1] == 1) and words.min() >= 3 and words.max() < 40
    assert torch.all(words.view(3, 2, 6)[:, 0] == words.view(3, 2, 6)[:, 1])  # one offset per sample
    assert torch.all(eval_positions[:, 3:] == torch.arange(3, 9))


def test_rank_from_cached_embeddings_equals_the_model_alpha():
    model, d = build()
    model.eval()
    question = batch(d, b=1, m=1)
    candidates = batch(d, b=1, m=4)[:, :4]
    candidates[0, 2:] = torch.randint(5, 40, (2, 6))
    with torch.no_grad():
        _, extra = model(torch.cat([question, candidates], dim=1))
        q_emb = model(question)[1]["sequence_embeddings"][0]
        c_emb = model(candidates.view(4, 1, 6))[1]["sequence_embeddings"][:, 0]
        ranked = model.encoder.rank(q_emb, c_emb)
    torch.testing.assert_close(ranked[0], extra["cross_attention"][0, 0, 1:], rtol=1e-5, atol=1e-6)


def _features_of_first_sequence(no_cross_layer, tokens):
    model, _ = build(no_cross_layer=no_cross_layer)
    with torch.no_grad():  # larger weights than BERT's init, so that every path is visible
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0, 0.2)
    model.eval()
    return model(tokens, features_only=True)[0][0, 0]


def test_without_the_cross_layer_sequences_do_not_see_each_other():
    _, d = build()
    tokens = batch(d, b=1, m=3)
    changed = tokens.clone()
    changed[0, 1] = torch.randint(5, 40, (6,))
    same = _features_of_first_sequence(True, tokens) - _features_of_first_sequence(True, changed)
    assert same.abs().max() == 0
    different = _features_of_first_sequence(False, tokens) - _features_of_first_sequence(False, changed)
    assert different.abs().max() > 1e-3


@pytest.mark.end_to_end
def test_pretraining_runs_with_fairseq_train(tmp_path):
    binarized_training_text(tmp_path, 20, 8)
    out = fairseq_train(tmp_path / "bin", task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                        save_dir=tmp_path / "ckpt", extra=["--num-sequences", 6, "--sequence-length", 16,
                                                           "--batch-size", 4, "--max-update", 8,
                                                           "--no-epoch-checkpoints", "--log-format", "simple",
                                                           "--log-interval", 4])
    assert "samples of 6 x 16 tokens" in out and "num_updates 8" in out


def test_init_std_scales_berts_initialisation():
    model, _ = build(encoder_embed_dim=64, init_std=0.1)
    encoder = model.encoder
    for weight in (encoder.sentence_encoder.embed_tokens.weight, encoder.cross_layers[0][0].attention.q_proj.weight,
                   encoder.final_layer.fc1.weight, encoder.special_embeddings.weight):
        assert abs(weight.std().item() - 0.1) < 0.01
    assert encoder.lm_head.weight is encoder.sentence_encoder.embed_tokens.weight  # tied, scaled once
    assert encoder.sentence_encoder.embed_tokens.weight[1].abs().max() == 0  # padding row stays zero
    tiny_default, _ = build(encoder_embed_dim=64)
    assert tiny_default.args.init_std == 64 ** -0.5
    base = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["cross_thought_base"](base)
    assert base.init_std == 0.02  # BERT's


@pytest.mark.end_to_end
def test_cross_sequence_layer_recovers_a_word_seen_only_in_other_sequences(tmp_path):
    """The measured result of scripts/cross_thought_synthetic.py: a value masked in one sequence is
    shown only by the other sequences of its sample; with the cross-sequence layer the tiny model
    learns to copy it, without it the model stays at chance (0.1). Sequences of 4 tokens (2 fillers,
    the value, </s>) make it learn sooner than the script's 8: 0.922 against 0.081 at 200 updates (1.00 at
    300), where 8 tokens need about 500."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cross_thought_synthetic.py"), "--workdir", str(tmp_path / "work"),
         "--length", "4", "--updates", "200", "--train-samples", "8000"],
        env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    accuracy = dict(re.findall(r"^  (.+?)\s+([0-9.]+)$", proc.stdout, flags=re.M))
    assert float(accuracy["cross-sequence layer"]) > 0.8, proc.stdout[-1000:]
    assert float(accuracy["no cross-sequence layer"]) < 0.2, proc.stdout[-1000:]


def _saved_activation_bytes(model, tokens, **kwargs):
    """Bytes autograd holds for the backward pass after a forward (what a GPU
    keeps in memory), outside any checkpointed region."""
    from segatron_fairseq.evaluation.activation_memory import SavedTensorBytes

    with SavedTensorBytes() as saved:
        model(tokens, **kwargs)
    return saved.bytes


def test_chunked_encoding_is_exact_and_bounds_the_encoder_memory():
    """100 candidates and a question, encoded 16 sequences at a time: the same
    outputs and gradients as all at once, with the encoder's activations held
    for one chunk only (each chunk is recomputed in the backward pass)."""
    settings = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, encoder_layers=2)
    whole, d = build(**settings)
    chunked, _ = build(encoder_chunk_sequences=16, **settings)
    chunked.load_state_dict(whole.state_dict())
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(d.nspecial, len(d) - 1, (2, 101, 12), generator=g)
    tokens[1, 60:] = d.pad()  # 59 candidates for the second question
    results = []
    for model in (whole, chunked):
        model.train()
        torch.manual_seed(11)  # the same word offsets
        _, extra = model(tokens, cross_only=True)
        extra["cross_attention"][:, 0, 1:6].log().sum().backward()  # -log alpha[0][m] of Eq. 10, five answers
        results.append((extra["cross_attention"].detach(), {n: p.grad for n, p in model.named_parameters()}))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    for name, grad in results[0][1].items():
        if grad is not None:
            torch.testing.assert_close(results[1][1][name], grad, rtol=1e-4, atol=1e-6, msg=name)
    whole_bytes = _saved_activation_bytes(whole, tokens, cross_only=True)
    chunked_bytes = _saved_activation_bytes(chunked, tokens, cross_only=True)
    assert chunked_bytes * 5 < whole_bytes, (chunked_bytes, whole_bytes)


def test_sizes_are_checked_per_sequence_never_per_sample():
    """fairseq drops items whose size exceeds max_positions; a Cross-Thought
    sample of M sequences is checked sequence by sequence instead, and a
    sequence that does not fit is an error, not a silent drop."""
    import numpy as np

    from segatron_fairseq.data.sequence_pair_dataset import SequenceGroupDataset
    from segatron_fairseq.tasks.per_sequence_sizes import PerSequenceSizeCheck

    model, _ = build()  # --max-positions 40, 3 special tokens
    assert model.max_positions() == 37
    groups = [[[5] * 30 for _ in range(101)], [[6] * 50, [7] * 3]]  # 3030 tokens; a 50-token text
    dataset = SequenceGroupDataset(groups, [0, 1], pad=1, max_length=37)
    assert dataset.truncated == 1 and dataset.sizes.tolist() == [3030, 40]
    assert dataset.sequence_sizes.tolist() == [30, 37]
    indices = np.arange(2)
    kept = PerSequenceSizeCheck().filter_indices_by_size(indices, dataset, model.max_positions())
    assert kept.tolist() == [0, 1]
    message = "2 samples hold a short sequence longer than 20 tokens.*sample 0 has one of 30"
    with pytest.raises(ValueError, match=message):
        PerSequenceSizeCheck().filter_indices_by_size(indices, dataset, 20)


@pytest.mark.parametrize("pooling", ["flatten", "average"])
def test_a_fine_tuned_pair_classifier_reloads_from_either_layout(pooling):
    """A pair classifier is a task head (``task_heads.pair``); a checkpoint from before 0.3.0 kept it in RoBERTa's
    ``classification_heads``, whose upgrade reads a ``dense`` layer the flattening classifier has not: both layouts
    load, with the saved head's logits."""
    def fine_tuned(seed):
        model = tiny_model("cross_thought_tiny", "--pair-pooling", pooling, seed=seed)
        model.register_classification_head("pair", num_classes=3)
        return model

    saved = fine_tuned(seed=0)
    tokens = torch.randint(4, 30, (2, 2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected, _ = saved(tokens, classification_head_name="pair")
    current = saved.state_dict()
    before_0_3_0 = {key.replace("task_heads.", "classification_heads.", 1): value for key, value in current.items()}
    for state in (current, before_0_3_0):
        model = fine_tuned(seed=1)
        state = dict(state)
        model.upgrade_state_dict_named(state, "")
        model.load_state_dict(state)
        with torch.no_grad():
            torch.testing.assert_close(model(tokens, classification_head_name="pair")[0], expected, rtol=0, atol=0)
