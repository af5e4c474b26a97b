"""segatron_lm_loss with the adaptive softmax: the summed loss of a large half-precision batch."""
from types import SimpleNamespace

import tiny_models
import torch
from fairseq.criterions.adaptive_loss import AdaptiveLoss

from segatron_fairseq.criterions.segatron_lm_loss import SegatronLMLoss


def _segatron_xl(dictionary, **fields):
    """Segatron-XL of one layer of width 16 (2 heads of 8, no dropout) over ``dictionary``, with config ``fields``."""
    width = tiny_models.as_options(decoder_layers=1, decoder_embed_dim=16, decoder_attention_heads=2,
                                   decoder_head_dim=8, decoder_ffn_embed_dim=32)
    return tiny_models.tiny_model("segatron_xl", *tiny_models.as_options(dropout=0.0, **fields), width=width,
                                  vocabulary=dictionary)


def test_adaptive_loss_of_a_large_fp16_batch_is_summed_in_float32():
    dictionary = tiny_models.dictionary(words=200)
    model = _segatron_xl(dictionary, mem_len=0, no_sentence_part=True, no_paragraph_part=True,
                         adaptive_softmax_cutoff="50,100", adaptive_input=True, tie_adaptive_weights=True,
                         tie_adaptive_proj=True)
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
    dictionary = tiny_models.dictionary(words=60)
    plain = _segatron_xl(dictionary, mem_len=5, no_paragraph_part=True)
    assert plain.segment_parts() == ["sentence"] and plain.decoding_window(7) == 12
    assert plain.eos() == dictionary.eos() and not plain.has_adaptive_softmax()
    adaptive = _segatron_xl(dictionary, mem_len=5, same_length=True, no_sentence_part=True, no_paragraph_part=True,
                            adaptive_softmax_cutoff="20,40")
    assert adaptive.segment_parts() == [] and adaptive.decoding_window(7) == 5 and adaptive.has_adaptive_softmax()
    features, target = torch.randn(2, 3, 16), torch.randint(4, len(dictionary), (6,))
    logits, band_targets = adaptive.adaptive_softmax_bands(features, target)
    expected_logits, expected_targets = adaptive.decoder.adaptive_softmax(features, target)
    assert len(logits) == len(expected_logits) == 3
    for band, expected in zip(logits + band_targets, expected_logits + expected_targets):
        assert (band is None and expected is None) or torch.equal(band, expected)
