"""segatron_lm_loss with the adaptive softmax: the summed loss of a large half-precision batch."""
from types import SimpleNamespace

import torch
from fairseq.criterions.adaptive_loss import AdaptiveLoss
from fairseq.data import Dictionary
from fairseq.modules import AdaptiveInput

from segatron_fairseq.criterions.segatron_lm_loss import SegatronLMLoss
from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLDecoder, SegatronXLModel


def test_adaptive_loss_of_a_large_fp16_batch_is_summed_in_float32():
    dictionary = Dictionary()
    for i in range(200):
        dictionary.add_symbol(f"w{i}")
    cfg = SegatronXLConfig(decoder_layers=1, decoder_embed_dim=16, decoder_attention_heads=2, decoder_head_dim=8,
                           decoder_ffn_embed_dim=32, mem_len=0, dropout=0.0, no_sentence_part=True,
                           no_paragraph_part=True, adaptive_softmax_cutoff="50,100", adaptive_input=True,
                           tie_adaptive_weights=True, tie_adaptive_proj=True)
    torch.manual_seed(0)
    embed = AdaptiveInput(len(dictionary), dictionary.pad(), 16, 1.0, 16, [50, 100])
    model = SegatronXLModel(SegatronXLDecoder(cfg, dictionary, embed)).eval()
    tokens = torch.randint(4, len(dictionary), (64, 300))
    sample = {"net_input": {"src_tokens": tokens}, "target": tokens.roll(-1, dims=1)}
    task = SimpleNamespace(target_dictionary=dictionary)
    criterion = SegatronLMLoss(task, sentence_avg=False)

    with torch.no_grad():
        reference, _, _ = criterion(model, sample)
        assert reference > 70000  # beyond float16's largest value, 65504
        model.half()
        loss, sample_size, logging = criterion(model, sample)
        fairseq_loss, _, _ = AdaptiveLoss(task, sentence_avg=False)(model, sample)
    assert sample_size == logging["ntokens"] == 64 * 300
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, reference, rtol=1e-2, atol=0)
    assert torch.isinf(fairseq_loss)  # what the float32 sum avoids


def test_the_model_answers_what_tasks_criterions_and_the_hub_ask():
    """The criterion, the task, the hub and the evaluation ask the model, not its decoder: its segment parts,
    decoding window, ``</s>`` and adaptive softmax."""
    dictionary = Dictionary()
    for i in range(60):
        dictionary.add_symbol(f"w{i}")
    sizes = dict(decoder_layers=1, decoder_embed_dim=16, decoder_attention_heads=2, decoder_head_dim=8,
                 decoder_ffn_embed_dim=32, mem_len=5, dropout=0.0)
    plain = SegatronXLModel(SegatronXLDecoder(SegatronXLConfig(**sizes, no_paragraph_part=True), dictionary,
                                              torch.nn.Embedding(len(dictionary), 16)))
    assert plain.segment_parts() == ["sentence"] and plain.decoding_window(7) == 12
    assert plain.eos() == dictionary.eos() and not plain.has_adaptive_softmax()
    cfg = SegatronXLConfig(**sizes, same_length=True, no_sentence_part=True, no_paragraph_part=True,
                           adaptive_softmax_cutoff="20,40")
    adaptive = SegatronXLModel(SegatronXLDecoder(cfg, dictionary, torch.nn.Embedding(len(dictionary), 16)))
    assert adaptive.segment_parts() == [] and adaptive.decoding_window(7) == 5 and adaptive.has_adaptive_softmax()
    features, target = torch.randn(2, 3, 16), torch.randint(4, len(dictionary), (6,))
    logits, band_targets = adaptive.adaptive_softmax_bands(features, target)
    expected_logits, expected_targets = adaptive.decoder.adaptive_softmax(features, target)
    assert len(logits) == len(expected_logits) == 3
    for band, expected in zip(logits + band_targets, expected_logits + expected_targets):
        assert (band is None and expected is None) or torch.equal(band, expected)
