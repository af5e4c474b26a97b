"""Segatron-XL attention scores against a pair-by-pair computation of Eq. 1 with Eq. 3."""
import math

import pytest
import torch
from fairseq.data import Dictionary
from torch import nn

from segatron_fairseq.models.segatron_xl import SegatronXLConfig, SegatronXLDecoder
from segatron_fairseq.modules import SegmentRelativeMultiheadAttention
from segatron_fairseq.modules.segatron_xl_stack import window_mask

SEQ, BATCH = 7, 2


def sinusoid(distance: float, dim: int):
    return torch.tensor(
        [math.sin(distance / 10000 ** (2 * k / dim)) for k in range(dim // 2)]
        + [math.cos(distance / 10000 ** (2 * k / dim)) for k in range(dim // 2)],
        dtype=torch.float64,
    )


def make_decoder(sentence, paragraph, pre_norm=False, mem_len=5, clamp_len=-1, origin="query", same_length=False):
    dictionary = Dictionary()
    for i in range(30):
        dictionary.add_symbol(f"w{i}")
    cfg = SegatronXLConfig(decoder_layers=2, decoder_embed_dim=30, decoder_attention_heads=3, decoder_head_dim=8,
                           decoder_ffn_embed_dim=40, dropout=0.0, attention_dropout=0.0, mem_len=mem_len,
                           clamp_len=clamp_len, pre_norm=pre_norm, no_sentence_part=not sentence,
                           no_paragraph_part=not paragraph, segment_distance_origin=origin, init_std=0.3,
                           same_length=same_length)
    torch.manual_seed(0)
    decoder = SegatronXLDecoder(cfg, dictionary, nn.Embedding(len(dictionary), 30, padding_idx=dictionary.pad()))
    return decoder.double().eval()


def make_stream(length):
    """Tokens and start flags of two different streams (rows)."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(4, 34, (BATCH, length), generator=g)
    sentence = torch.rand(BATCH, length, generator=g) < 0.35
    paragraph = sentence & (torch.rand(BATCH, length, generator=g) < 0.4)
    return tokens, sentence, paragraph


def third_segment_attention_inputs(decoder):
    """Each layer's attention inputs (hidden, memory, distances, u, v, mask, need_weights) on the third of
    three segments of ``make_stream`` (memory carried), the stream positions of that window's keys (the
    memory holds positions 2*SEQ-5 .. 2*SEQ-1) and the start flags of the stream."""
    tokens, sentence_flags, paragraph_flags = make_stream(3 * SEQ)
    captured = []
    hooks = [layer.attention.register_forward_pre_hook(lambda module, args: captured.append(args))
             for layer in decoder.layers]
    with torch.no_grad():
        for segment in range(3):
            captured.clear()
            cols = slice(segment * SEQ, (segment + 1) * SEQ)
            decoder.extract_features(tokens[:, cols], sentence_flags[:, cols], paragraph_flags[:, cols])
    for hook in hooks:
        hook.remove()
    return captured, list(range(2 * SEQ - 5, 3 * SEQ)), {"sentence": sentence_flags, "paragraph": paragraph_flags}


def boundaries_between(flags, j, i):
    """Number of starts at positions j+1..i: boundaries crossed going from key j to query i."""
    return int(flags[j + 1:i + 1].sum())


def reference_scores(attention, window, seq_len, positions, flags, u, v, part_dims, clamp_len, origin="query"):
    """(H, T, K) scores of one row, pair by pair. ``positions``: stream position of each key;
    ``window``: the attention's input (with pre-norm, the layer has normalized it already).

    origin "query": segment distances between key j and query i (Eq. 3); "window_end":
    the authors' code, between key j + (K-1-i) and the window's last token."""
    keys, d = window.shape
    heads, head_dim = attention.num_heads, attention.head_dim
    w_q, w_k, _ = attention.qkv.weight.chunk(3, dim=0)
    w_r = attention.r_proj.weight  # (H*dh, d): W_R over the concatenated R
    scores = torch.full((heads, seq_len, keys), float("nan"), dtype=torch.float64)
    for i in range(seq_len):
        qi = keys - seq_len + i  # query's key-window position
        q = (w_q @ window[qi]).view(heads, head_dim)
        for j in range(qi + 1):
            k = (w_k @ window[j]).view(heads, head_dim)
            token_distance = positions[qi] - positions[j]
            if clamp_len > 0:
                token_distance = min(token_distance, clamp_len)
            parts = [sinusoid(token_distance, part_dims["token"])]
            if origin == "query":
                segment_from, segment_to = positions[j], positions[qi]
            else:
                segment_from, segment_to = positions[j + keys - 1 - qi], positions[keys - 1]
            for part in ("sentence", "paragraph"):
                if part in part_dims:
                    distance = boundaries_between(flags[part], segment_from, segment_to)
                    if origin == "window_end" and clamp_len > 0:  # theirs clamps all three parts
                        distance = min(distance, clamp_len)
                    parts.append(sinusoid(distance, part_dims[part]))
            r = (w_r @ torch.cat(parts)).view(heads, head_dim)
            scores[:, i, j] = ((q + u) * k).sum(-1) + ((q + v) * r).sum(-1)
    return scores


@pytest.mark.parametrize("sentence,paragraph", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("pre_norm,clamp_len,origin", [(False, -1, "query"), (True, 4, "query"),
                                                      (False, -1, "window_end"), (False, 2, "window_end")])
def test_scores_match_pair_by_pair_reference(sentence, paragraph, pre_norm, clamp_len, origin):
    decoder = make_decoder(sentence, paragraph, pre_norm=pre_norm, clamp_len=clamp_len, mem_len=5, origin=origin)
    captured, positions, flags = third_segment_attention_inputs(decoder)
    for layer_number, (hidden, memory, distances, u, v, mask, _) in enumerate(captured):
        attention = decoder.layers[layer_number].attention
        assert memory.shape == (5, BATCH, 30)
        scores, _ = attention.scores(hidden, memory, distances, u, v)
        for b in range(BATCH):
            window = torch.cat([memory[:, b], hidden[:, b]])
            row_flags = {part: stream_flags[b] for part, stream_flags in flags.items()}
            expected = reference_scores(attention, window, SEQ, positions, row_flags, u, v, decoder.part_dims,
                                        clamp_len, origin)
            visible = ~expected.isnan()
            assert visible.sum() == 3 * sum(5 + i + 1 for i in range(SEQ))
            assert torch.equal(visible[0], ~mask)
            torch.testing.assert_close(scores[b][visible], expected[visible], rtol=0, atol=1e-6)


@pytest.mark.parametrize("sentence,paragraph", [(True, True), (False, False)])
def test_same_length_shows_each_query_its_last_mem_len_positions(sentence, paragraph):
    """same_length: query i sees key j iff 0 <= i - j < mem_len (stream positions), with memory; and decoding
    step by step within that window gives the full forward's features, to 1e-5."""
    decoder = make_decoder(sentence, paragraph, mem_len=4, same_length=True)
    tokens, sentence_flags, paragraph_flags = make_stream(3 * SEQ)
    with torch.no_grad():
        decoder.extract_features(tokens[:, :SEQ], sentence_flags[:, :SEQ], paragraph_flags[:, :SEQ])
        _, extra = decoder(tokens[:, SEQ:2 * SEQ], sentence_flags[:, SEQ:2 * SEQ], paragraph_flags[:, SEQ:2 * SEQ],
                           features_only=True, need_attn=True)
    # keys: memory (stream positions SEQ-4 .. SEQ-1), then the segment (SEQ .. 2*SEQ-1)
    hidden = torch.tensor([[not 0 <= (SEQ + i) - (SEQ - 4 + j) < 4 for j in range(4 + SEQ)] for i in range(SEQ)])
    assert torch.equal(window_mask(SEQ, 4 + SEQ, 4, True, torch.device("cpu")), hidden)
    for weights in extra["attn_layers"]:  # (B, H, T, 4 + T)
        assert torch.all(weights[:, :, hidden] == 0)
        torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    decoder.reset_memory()
    with torch.no_grad():
        full = decoder.extract_features(tokens[:, :2 * SEQ], sentence_flags[:, :2 * SEQ],
                                        paragraph_flags[:, :2 * SEQ])
        decoder.reset_memory()
        cache = decoder.start_decoding(BATCH, tokens.device)
        for t in range(2 * SEQ):
            cache.keep_last(decoder.decoding_window(SEQ) - 1)
            stepped = decoder.decode_step(tokens[:, t], {"sentence": sentence_flags[:, t],
                                                         "paragraph": paragraph_flags[:, t]}, cache)
            torch.testing.assert_close(stepped, full[:, t], rtol=0, atol=1e-5)
    assert decoder.decoding_window(SEQ) == 4


@pytest.mark.parametrize("origin,causal", [("query", True), ("window_end", False)])
def test_only_window_end_lets_a_query_see_later_sentence_starts(origin, causal):
    """Flipping the sentence start of the segment's last token must not change any earlier
    output of a language model; with the authors' window_end distances it changes all of them."""
    decoder = make_decoder(True, True, origin=origin)
    tokens, sentence_flags, paragraph_flags = make_stream(SEQ)
    paragraph_flags[:, -1] = False
    flipped = sentence_flags.clone()
    flipped[:, -1] = ~flipped[:, -1]
    with torch.no_grad():
        before = decoder.extract_features(tokens, sentence_flags, paragraph_flags)
        decoder.reset_memory()
        after = decoder.extract_features(tokens, flipped, paragraph_flags)
    earlier_change = (before[:, :-1] - after[:, :-1]).abs().amax(dim=-1)  # (B, T-1)
    if causal:
        assert earlier_change.max() < 1e-12
    else:
        assert (earlier_change[:, 1:] > 1e-6).all()  # every query that has an earlier key


def test_parts_are_about_a_third_each():
    from segatron_fairseq.modules import segment_part_dims

    assert segment_part_dims(410, True, True) == {"token": 136, "sentence": 136, "paragraph": 138}
    assert segment_part_dims(410, False, False) == {"token": 410}
    assert segment_part_dims(410, True, False) == {"token": 206, "sentence": 204}


def test_both_parts_off_is_transformer_xl_attention():
    """No sentence/paragraph parts: scores equal Transformer-XL's (token sinusoid over all of d)."""
    decoder = make_decoder(False, False)
    assert isinstance(decoder.layers[0].attention, SegmentRelativeMultiheadAttention)
    assert decoder.part_dims == {"token": 30}
    assert decoder.layers[0].attention.r_proj.weight.shape == (24, 30)


def test_half_precision_tables_are_rounded_from_float32_angles():
    """fp16 training: R must be sin/cos of exact angles, rounded once (half angles of
    distances in the hundreds are off by up to 0.25 rad)."""
    from segatron_fairseq.modules import SegmentDistances

    distances = SegmentDistances({"token": 16}, 400, -1, torch.float16, torch.device("cpu"))
    expected = torch.stack([sinusoid(399 - r, 16) for r in range(400)])
    assert distances.position_table.dtype == torch.float16
    assert (distances.position_table.double() - expected).abs().max() < 1e-3


@pytest.mark.parametrize("origin", ["query", "window_end"])
def test_scores_gradients_match_finite_differences(origin):
    """gradcheck of the scores with respect to the segment, the memory and W_R (float64)."""
    from segatron_fairseq.modules import SegmentDistances

    decoder = make_decoder(True, True, origin=origin)
    attention = decoder.layers[0].attention
    g = torch.Generator().manual_seed(3)
    hidden = torch.randn(SEQ, BATCH, 30, generator=g, dtype=torch.float64, requires_grad=True)
    memory = torch.randn(5, BATCH, 30, generator=g, dtype=torch.float64, requires_grad=True)
    _, sentence_flags, paragraph_flags = make_stream(5 + SEQ)
    counters = {"sentence": sentence_flags.long().cumsum(1), "paragraph": paragraph_flags.long().cumsum(1)}
    distances = SegmentDistances(decoder.part_dims, 5 + SEQ, -1, torch.float64, torch.device("cpu"),
                                 query_counters={p: c[:, 5:] for p, c in counters.items()},
                                 key_counters=counters, origin=origin)
    assert origin == "window_end" or distances.key_runs.sum(1).eq(1).all()  # each key in one run
    r_weight = attention.r_proj.weight.detach().clone().requires_grad_()
    del attention.r_proj.weight
    attention.r_proj.weight = r_weight  # a plain tensor, so gradcheck can vary it

    def scores(hidden, memory, r_weight):
        attention.r_proj.weight = r_weight
        return attention.scores(hidden, memory, distances, decoder.content_bias[0], decoder.position_bias[0])[0]

    assert torch.autograd.gradcheck(scores, (hidden, memory, r_weight))


def test_adaptive_model_trains_under_autocast():
    """--amp: fairseq's AdaptiveInput fails under autocast unless the model keeps it out."""
    from fairseq.modules import AdaptiveInput

    dictionary = Dictionary()
    for i in range(100):
        dictionary.add_symbol(f"w{i}")
    cfg = SegatronXLConfig(decoder_layers=1, decoder_embed_dim=32, decoder_attention_heads=2, decoder_head_dim=16,
                           decoder_ffn_embed_dim=64, mem_len=8, adaptive_softmax_cutoff="20,50",
                           adaptive_input=True, tie_adaptive_weights=True, tie_adaptive_proj=True)
    embed = AdaptiveInput(len(dictionary), dictionary.pad(), 32, 1.0, 32, [20, 50])
    decoder = SegatronXLDecoder(cfg, dictionary, embed)
    tokens, sentence_flags, paragraph_flags = make_stream(8)
    tokens = tokens + 60  # some tokens in every band
    with torch.autocast("cpu", dtype=torch.bfloat16):
        features = decoder.extract_features(tokens, sentence_flags, paragraph_flags)
        logits, targets = decoder.adaptive_softmax(features, tokens.roll(-1, dims=1).reshape(-1))
        loss = sum(nn.functional.cross_entropy(logit.float(), target, reduction="sum")
                   for logit, target in zip(logits, targets) if target is not None)
    loss.backward()
    assert torch.isfinite(loss)
    assert embed.embeddings[0][0].weight.grad.abs().sum() > 0


def test_attention_weights_on_request():
    """need_attn: each layer's probabilities are the softmax of its (reference-checked) scores under the mask;
    asking for them changes no output."""
    decoder = make_decoder(True, True, mem_len=5)
    decoder.eval()
    tokens, sentence_flags, paragraph_flags = make_stream(2 * SEQ)
    captured = []
    hooks = [layer.attention.register_forward_pre_hook(lambda module, args: captured.append(args))
             for layer in decoder.layers]
    with torch.no_grad():
        decoder(tokens[:, :SEQ], sentence_flags[:, :SEQ], paragraph_flags[:, :SEQ])  # fills the memory
        captured.clear()
        with_attn, extra = decoder(tokens[:, SEQ:], sentence_flags[:, SEQ:], paragraph_flags[:, SEQ:],
                                   need_attn=True)
        decoder.reset_memory()
        decoder(tokens[:, :SEQ], sentence_flags[:, :SEQ], paragraph_flags[:, :SEQ])
        without, plain_extra = decoder(tokens[:, SEQ:], sentence_flags[:, SEQ:], paragraph_flags[:, SEQ:])
    for h in hooks:
        h.remove()
    assert torch.equal(with_attn, without) and plain_extra["attn"] == [None]
    assert len(extra["attn_layers"]) == len(decoder.layers)
    for layer, weights, (hidden, memory, distances, u, v, mask, _) in zip(decoder.layers, extra["attn_layers"],
                                                                        captured):
        scores, _ = layer.attention.scores(hidden, memory, distances, u, v)
        expected = torch.softmax((scores * layer.attention.scale).float().masked_fill(mask, float("-inf")), -1)
        assert weights.shape == (BATCH, 3, SEQ, 5 + SEQ)
        torch.testing.assert_close(weights, expected, rtol=0, atol=1e-6)
        assert torch.all(weights.masked_select(mask) == 0)
    torch.testing.assert_close(extra["attn"][0], extra["attn_layers"][-1].mean(dim=1))


@pytest.mark.parametrize("sentence,paragraph,pre_norm,clamp_len,origin", [
    (True, True, False, -1, "query"), (True, False, True, 4, "query"), (False, False, False, -1, "query"),
    (False, False, False, -1, "window_end")])
@pytest.mark.parametrize("with_memory", [False, True])
def test_incremental_decoding_equals_a_full_forward(sentence, paragraph, pre_norm, clamp_len, origin, with_memory):
    """Each decode_step (cached keys and values, one query) gives the features of the last position of a full
    forward over the same window (the memory, then the prefix), to 1e-5, segment parts on and off."""
    decoder = make_decoder(sentence, paragraph, pre_norm=pre_norm, clamp_len=clamp_len, mem_len=5, origin=origin)
    decoder.eval()
    tokens, sentence_flags, paragraph_flags = make_stream(2 * SEQ)
    with torch.no_grad():
        if with_memory:
            decoder.extract_features(tokens[:, :SEQ], sentence_flags[:, :SEQ], paragraph_flags[:, :SEQ])
        saved = decoder._memory.saved()
        cache = decoder.start_decoding(BATCH, tokens.device)
        assert cache.length == (5 if with_memory else 0)
        for t in range(SEQ, 2 * SEQ):
            stepped = decoder.decode_step(tokens[:, t], {"sentence": sentence_flags[:, t],
                                                         "paragraph": paragraph_flags[:, t]}, cache)
            decoder._memory.restore(saved)
            full = decoder.extract_features(tokens[:, SEQ:t + 1], sentence_flags[:, SEQ:t + 1],
                                            paragraph_flags[:, SEQ:t + 1])[:, -1]
            torch.testing.assert_close(stepped, full, rtol=0, atol=1e-5)
    assert cache.length == (5 if with_memory else 0) + SEQ


@pytest.mark.parametrize("sentence,paragraph,pre_norm", [(True, True, False), (True, False, True),
                                                       (False, False, False)])
@pytest.mark.parametrize("with_memory", [False, True])
def test_a_primed_cache_equals_decoding_the_prompt_step_by_step(sentence, paragraph, pre_norm, with_memory):
    """prime_decoding reads a prompt in one forward: the features of its last position and the next steps are
    those of a full forward over the window (memory, prompt, new tokens), to 1e-5; the memory is untouched."""
    decoder = make_decoder(sentence, paragraph, pre_norm=pre_norm, mem_len=5)
    decoder.eval()
    tokens, sentence_flags, paragraph_flags = make_stream(2 * SEQ)
    prompt = SEQ + 3
    with torch.no_grad():
        if with_memory:
            decoder.extract_features(tokens[:, :SEQ], sentence_flags[:, :SEQ], paragraph_flags[:, :SEQ])
        saved = decoder._memory.saved()
        features, cache = decoder.prime_decoding(tokens[:, SEQ:prompt], sentence_flags[:, SEQ:prompt],
                                                 paragraph_flags[:, SEQ:prompt])
        assert {k: [h.data_ptr() for h in v.hidden] for k, v in decoder._memory.saved().items()} == \
            {k: [h.data_ptr() for h in v.hidden] for k, v in saved.items()}
        assert cache.length == (5 if with_memory else 0) + 3
        for t in range(prompt, 2 * SEQ + 1):
            decoder._memory.restore(saved)
            full = decoder.extract_features(tokens[:, SEQ:t], sentence_flags[:, SEQ:t], paragraph_flags[:, SEQ:t])
            torch.testing.assert_close(features, full[:, -1], rtol=0, atol=1e-5)
            if t < 2 * SEQ:
                features = decoder.decode_step(tokens[:, t], {"sentence": sentence_flags[:, t],
                                                              "paragraph": paragraph_flags[:, t]}, cache)


def test_incremental_decoding_is_refused_with_window_end_distances():
    """With the authors' distances an earlier position's state depends on the window's last token (the full
    forward of a longer prefix changes it), so cached keys would be stale."""
    decoder = make_decoder(True, True, origin="window_end")
    with pytest.raises(ValueError, match="incremental decoding needs causal distances"):
        decoder.start_decoding(BATCH, torch.device("cpu"))
    tokens, sentence_flags, paragraph_flags = make_stream(SEQ)
    with pytest.raises(ValueError, match="incremental decoding needs causal distances"):
        decoder.prime_decoding(tokens, sentence_flags, paragraph_flags)
    with torch.no_grad():
        shorter = decoder.extract_features(tokens[:, :4], sentence_flags[:, :4], paragraph_flags[:, :4])
        decoder.reset_memory()
        longer = decoder.extract_features(tokens, sentence_flags, paragraph_flags)
    assert not torch.allclose(shorter[:, 2], longer[:, 2])


def test_compile_layers_runs_the_eager_layers_on_cpu():
    """--compile-layers is for GPUs: on the CPU the decoder runs its own layers, with identical features
    (tests/modules/test_segatron_attention_cuda.py checks the compiled layers on a GPU)."""
    tokens, sentence_flags, paragraph_flags = make_stream(2 * SEQ)
    features = []
    for compiled in (False, True):
        decoder = make_decoder(True, True)
        decoder.cfg.compile_layers = compiled
        assert decoder._layers_to_run(torch.device("cpu")) is decoder.layers
        with torch.no_grad():
            features.append(torch.cat([decoder.extract_features(tokens[:, cols], sentence_flags[:, cols],
                                                                paragraph_flags[:, cols])
                                       for cols in (slice(0, SEQ), slice(SEQ, 2 * SEQ))], dim=1))
        assert decoder._compiled_layers is None
    assert torch.equal(features[0], features[1])
