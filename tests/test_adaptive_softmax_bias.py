"""The adaptive softmax with biases (Transformer-XL's output layer): log-probabilities and the training loss
against a token-by-token reference of the formula, and the option on the model."""
import argparse

import pytest
import torch
from fairseq.data import Dictionary

from segatron_fairseq.modules import BiasedAdaptiveSoftmax

CUTOFF = [6, 13]
VOCAB = 21


def make_softmax(factor):
    torch.manual_seed(0)
    softmax = BiasedAdaptiveSoftmax(VOCAB, 8, list(CUTOFF), dropout=0.0, factor=factor).double().eval()
    with torch.no_grad():  # biases that matter
        for module in [softmax.head] + [band[-1] for band in softmax.tail]:
            module.bias.normal_(std=1.0)
    return softmax


def reference_log_prob(softmax, hidden, word):
    """log p(word | hidden) for one vector, dot product by dot product."""
    head = softmax.head
    head_scores = torch.stack([head.weight[k] @ hidden + head.bias[k] for k in range(head.out_features)])
    head_log_probs = head_scores - torch.logsumexp(head_scores, 0)
    if word < CUTOFF[0]:
        return head_log_probs[word]
    bands = CUTOFF + [VOCAB]
    tail = max(t for t in range(len(CUTOFF)) if word >= bands[t])  # the word is in bands[tail] .. bands[tail+1]-1
    projection, _, output = softmax.tail[tail]
    projected = torch.stack([projection.weight[r] @ hidden for r in range(projection.out_features)])
    scores = torch.stack([output.weight[k] @ projected + output.bias[k] for k in range(output.out_features)])
    return head_log_probs[CUTOFF[0] + tail] + (scores - torch.logsumexp(scores, 0))[word - bands[tail]]


@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_log_probs_and_loss_equal_the_formula(factor):
    softmax = make_softmax(factor)
    hidden = torch.randn(1, 5, 8, dtype=torch.float64)
    log_probs = softmax.get_log_prob(hidden, None)[0]  # (5, V)
    expected = torch.tensor([[reference_log_prob(softmax, hidden[0, t], w) for w in range(VOCAB)]
                             for t in range(5)], dtype=torch.float64)
    torch.testing.assert_close(log_probs, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(5, dtype=torch.float64))
    # the training path (segatron_lm_loss sums each band's cross-entropy): the same -log p of the targets
    target = torch.tensor([2, 7, 15, 20, 6])
    logits, band_targets = softmax(hidden.view(5, 8), target)
    loss = sum(torch.nn.functional.cross_entropy(band_logits, band_target, reduction="sum")
               for band_logits, band_target in zip(logits, band_targets) if band_target is not None)
    torch.testing.assert_close(loss, -expected[torch.arange(5), target].sum(), rtol=0, atol=1e-10)


def test_the_model_option():
    from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLModel

    dictionary = Dictionary()
    for i in range(VOCAB - dictionary.nspecial):
        dictionary.add_symbol(f"w{i}")
    task = argparse.Namespace(target_dictionary=dictionary, source_dictionary=dictionary)
    cfg = SegatronXLConfig(decoder_layers=1, decoder_embed_dim=24, decoder_attention_heads=2, decoder_head_dim=12,
                           decoder_ffn_embed_dim=32, adaptive_softmax_cutoff="6,13", adaptive_softmax_bias=True)
    model = SegatronXLModel.build_model(cfg, task)
    assert isinstance(model.decoder.adaptive_softmax, BiasedAdaptiveSoftmax)
    assert "decoder.adaptive_softmax.tail.1.2.bias" in model.state_dict()
    cfg.tie_adaptive_weights, cfg.adaptive_input = True, True
    with pytest.raises(ValueError, match="cannot be combined with --tie-adaptive-weights"):
        SegatronXLModel.build_model(cfg, task)
