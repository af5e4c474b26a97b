"""The adaptive softmax with biases (Transformer-XL's output layer): log-probabilities and the training loss
against a token-by-token reference of the formula, and the option on the model."""
import pytest
import torch
from tiny_models import as_options, dictionary, tiny_model

from segatron_fairseq.modules import BiasedAdaptiveSoftmax

CUTOFF = [6, 13]
VOCAB = 21


def make_softmax(factor, adaptive_input=None):
    torch.manual_seed(0)
    softmax = BiasedAdaptiveSoftmax(VOCAB, 8, list(CUTOFF), dropout=0.0, factor=factor,
                                    adaptive_inputs=adaptive_input, tie_proj=adaptive_input is not None).double()
    with torch.no_grad():  # biases that matter
        for module in [softmax.head] + [band[-1] for band in softmax.tail]:
            module.bias.normal_(std=1.0)
    return softmax.eval()


def adaptive_input(factor):
    """fairseq's AdaptiveInput over the same bands (width 8), weights drawn at a visible scale."""
    from fairseq.modules import AdaptiveInput

    torch.manual_seed(1)
    embedding = AdaptiveInput(VOCAB, 1, 8, factor, 8, list(CUTOFF)).double()
    with torch.no_grad():
        for parameter in embedding.parameters():
            parameter.normal_(std=0.5)
    return embedding


def head_and_bands(softmax, embedding):
    """(W_head, b_head) and per band (P_i, W_i, b_i): the module's own weights, or with ``embedding`` the tied
    ones, read from the adaptive input (band i's table W_i, its projection P_i transposed) and the head's class
    rows."""
    if embedding is None:
        head = softmax.head
        bands = [(projection.weight, output.weight, output.bias) for projection, _, output in softmax.tail]
        return (head.weight, head.bias), bands
    head_weight = torch.cat([embedding.embeddings[0][0].weight, softmax.head.layer.class_proj.weight])
    bands = [(embedding.embeddings[i + 1][1].weight.t(), embedding.embeddings[i + 1][0].weight, output.bias)
             for i, (_, _, output) in enumerate(softmax.tail)]
    return (head_weight, softmax.head.bias), bands


def reference_log_prob(softmax, hidden, word, embedding=None):
    """log p(word | hidden) for one vector, dot product by dot product."""
    (head_weight, head_bias), bands_weights = head_and_bands(softmax, embedding)
    head_scores = torch.stack([head_weight[k] @ hidden + head_bias[k] for k in range(head_weight.size(0))])
    head_log_probs = head_scores - torch.logsumexp(head_scores, 0)
    if word < CUTOFF[0]:
        return head_log_probs[word]
    bands = CUTOFF + [VOCAB]
    tail = max(t for t in range(len(CUTOFF)) if word >= bands[t])  # the word is in bands[tail] .. bands[tail+1]-1
    projection, output, bias = bands_weights[tail]
    projected = torch.stack([projection[r] @ hidden for r in range(projection.size(0))])
    scores = torch.stack([output[k] @ projected + bias[k] for k in range(output.size(0))])
    return head_log_probs[CUTOFF[0] + tail] + (scores - torch.logsumexp(scores, 0))[word - bands[tail]]


@pytest.mark.parametrize("factor,tied", [(1.0, False), (2.0, False), (2.0, True)])
def test_log_probs_and_loss_equal_the_formula(factor, tied):
    """Untied, or tied to an AdaptiveInput (its tables and projections, the biases the softmax's own)."""
    embedding = adaptive_input(factor) if tied else None
    softmax = make_softmax(factor, embedding)
    hidden = torch.randn(1, 5, 8, dtype=torch.float64)
    log_probs = softmax.get_log_prob(hidden, None)[0]  # (5, V)
    expected = torch.tensor([[reference_log_prob(softmax, hidden[0, t], w, embedding) for w in range(VOCAB)]
                             for t in range(5)], dtype=torch.float64)
    torch.testing.assert_close(log_probs, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(5, dtype=torch.float64))
    # the training path (segatron_lm_loss sums each band's cross-entropy): the same -log p of the targets
    target = torch.tensor([2, 7, 15, 20, 6])
    logits, band_targets = softmax(hidden.view(5, 8), target)
    loss = sum(torch.nn.functional.cross_entropy(band_logits, band_target, reduction="sum")
               for band_logits, band_target in zip(logits, band_targets) if band_target is not None)
    torch.testing.assert_close(loss, -expected[torch.arange(5), target].sum(), rtol=0, atol=1e-10)


def _segatron_xl(**fields):
    """A one-layer Segatron-XL over ``VOCAB`` types with the biased adaptive softmax of bands ``CUTOFF``."""
    width = as_options(decoder_layers=1, decoder_embed_dim=24, decoder_attention_heads=2, decoder_head_dim=12,
                       decoder_ffn_embed_dim=32)
    return tiny_model("segatron_xl", *as_options(adaptive_softmax_cutoff="6,13", adaptive_softmax_bias=True, **fields),
                      width=width, vocabulary=dictionary(words=VOCAB - 4))


def test_the_model_option():
    model = _segatron_xl()
    assert isinstance(model.decoder.adaptive_softmax, BiasedAdaptiveSoftmax)
    assert "decoder.adaptive_softmax.tail.1.2.bias" in model.state_dict()
    tied = _segatron_xl(tie_adaptive_weights=True, tie_adaptive_proj=True, adaptive_input=True).decoder
    band = tied.adaptive_softmax.tail[1]
    assert band[-1].layer.weight is tied.embed_tokens.embeddings[2][0].weight and band[-1].bias.shape == (VOCAB - 13,)
    assert tied.adaptive_softmax.head.layer.word_proj.weight is tied.embed_tokens.embeddings[0][0].weight
