"""XLNet's two-stream attention against a pair-by-pair float64 computation: AC + BD + XLNet's segment
term, with bidirectional token / sentence / paragraph distances, memory, both streams and their masks."""
import functools
import math

import pytest
import torch
from fairseq.data import Dictionary
from test_segatron_attention import make_stream  # the same two rows of tokens and start flags

from segatron_fairseq.models.xlnet import XLNetConfig, XLNetModel
from segatron_fairseq.modules.xlnet_layer import XLNetLayer

SEQ, BATCH, REUSE, MEM = 7, 2, 4, 6


@functools.cache
def sinusoid(distance: int, dim: int):
    return torch.tensor(
        [math.sin(distance / 10000 ** (2 * k / dim)) for k in range(dim // 2)]
        + [math.cos(distance / 10000 ** (2 * k / dim)) for k in range(dim // 2)],
        dtype=torch.float64,
    )


def make_model(positions, origin="query", clamp_len=-1, tie=False):
    dictionary = Dictionary()
    for i in range(30):
        dictionary.add_symbol(f"w{i}")
    cfg = XLNetConfig(encoder_layers=2, encoder_embed_dim=30, encoder_attention_heads=3, encoder_head_dim=8,
                      encoder_ffn_embed_dim=40, dropout=0.0, attention_dropout=0.0, mem_len=MEM, clamp_len=clamp_len,
                      positions=positions, segment_distance_origin=origin, tie_position_biases=tie, init_std=0.3)
    torch.manual_seed(0)
    return XLNetModel(cfg, dictionary).double().eval()


def random_order_inputs(generator):
    """perm_mask (B, T, T) of a random factorization order (position 0 a non-target, first in every order
    and seen by all, so that every query sees a key), segment ids, a target mapping."""
    rank = torch.stack([torch.randperm(SEQ, generator=generator) for _ in range(BATCH)])
    rank[:, 0] = -1
    perm_mask = rank[:, None, :] >= rank[:, :, None]  # i may not see j unless j comes earlier
    perm_mask[:, :, 0] = False
    segment_ids = (torch.rand(BATCH, SEQ, generator=generator) < 0.5).long()
    target_mapping = torch.eye(SEQ, dtype=torch.float64)[None].expand(BATCH, -1, -1)
    return perm_mask, segment_ids, target_mapping


def third_segment(model):
    """Each layer's inputs and attention probabilities on the third of three segments (each starting
    REUSE positions after the last, memory carried), and the stream positions of that window's keys."""
    tokens, sentence, paragraph = make_stream(2 * REUSE + SEQ)
    g = torch.Generator().manual_seed(2)
    captured = []
    hooks = [layer.register_forward_pre_hook(lambda module, args: captured.append(args)) for layer in model.layers]
    with torch.no_grad():
        for segment in range(3):
            captured.clear()
            cols = slice(segment * REUSE, segment * REUSE + SEQ)
            perm_mask, segment_ids, target_mapping = random_order_inputs(g)
            _, extra = model(tokens[:, cols], perm_mask, target_mapping, segment_ids, sentence[:, cols],
                             paragraph[:, cols], reuse_len=REUSE, need_attn=True)
    for hook in hooks:
        hook.remove()
    memory_positions = list(range(2 * REUSE - MEM, 2 * REUSE))
    return captured, extra["attn_layers"], memory_positions + list(range(2 * REUSE, 2 * REUSE + SEQ)), \
        {"sentence": sentence.long().cumsum(1), "paragraph": paragraph.long().cumsum(1)}


def reference_scores(attention, window, stream, positions, counters, u, v, segments, part_dims, clamp_len, origin):
    """(H, T, K) scores of one row and stream, pair by pair. ``window``: the content inputs of the K keys;
    ``stream``: the T query inputs; ``counters[part]``: the row's running counter at each stream position;
    ``segments``: (different (T, K), embed (2, H, dh), bias (H, dh))."""
    keys = window.size(0)
    heads, head_dim = attention.num_heads, attention.head_dim
    w_q, w_k, _ = attention.qkv.weight.chunk(3, dim=0)
    w_r = attention.r_proj.weight
    different, embed, segment_bias = segments
    scores = torch.empty(heads, SEQ, keys, dtype=torch.float64)
    key_heads = (window @ w_k.T).view(keys, heads, head_dim)
    for i in range(SEQ):
        qi = keys - SEQ + i
        q = (w_q @ stream[i]).view(heads, head_dim)
        for j in range(keys):
            k = key_heads[j]
            token_distance = positions[qi] - positions[j]
            if clamp_len > 0:
                token_distance = max(-clamp_len, min(token_distance, clamp_len))
            parts = [sinusoid(token_distance, part_dims["token"])]
            for part in ("sentence", "paragraph"):
                if part not in part_dims:
                    continue
                c = counters[part]
                if origin == "query":
                    distance = c[positions[qi]] - c[positions[j]]
                else:  # offset qi - j counted from the window's last key, or backward from its first
                    offset = qi - j
                    distance = (c[positions[-1]] - c[positions[keys - 1 - offset]] if offset >= 0
                                else c[positions[0]] - c[positions[-offset]])
                    if clamp_len > 0:
                        distance = max(-clamp_len, min(distance, clamp_len))
                parts.append(sinusoid(int(distance), part_dims[part]))
            r = (w_r @ torch.cat(parts)).view(heads, head_dim)
            s = embed[int(different[i, j])]
            scores[:, i, j] = (((q + u) * k).sum(-1) + ((q + v) * r).sum(-1)
                               + ((q + segment_bias) * s).sum(-1))
    return scores


@pytest.mark.parametrize("positions,origin,clamp_len", [("token", "query", -1), ("segatron", "query", -1),
                                                         ("segatron", "window_end", 2)])
def test_two_stream_probabilities_match_pair_by_pair_reference(positions, origin, clamp_len):
    model = make_model(positions, origin, clamp_len, tie=clamp_len > 0)
    captured, weights, positions_of_keys, counters = third_segment(model)
    for layer_number, (content, query, memory, _, u, v, segments, content_mask, query_mask, _, _) in \
            enumerate(captured):
        assert memory.shape == (MEM, BATCH, 30) and query is not None
        assert content_mask.shape == (BATCH, SEQ, MEM + SEQ)
        attention = model.layers[layer_number].attention
        for b in range(BATCH):
            window = torch.cat([memory[:, b], content[:, b]])
            row_segments = (segments.different[b], segments.embed, segments.bias)
            row_counters = {part: c[b] for part, c in counters.items()}
            for stream, mask, probs in ((content[:, b], content_mask[b], weights[layer_number][0][b]),
                                        (query[:, b], query_mask[b], weights[layer_number][1][b])):
                expected = reference_scores(attention, window, stream, positions_of_keys, row_counters, u, v,
                                            row_segments, model.part_dims, clamp_len, origin)
                expected = torch.softmax((expected * attention.scale).masked_fill(mask, float("-inf")), dim=-1)
                # the softmax runs in float32 (as Segatron-XL's), the scores before it in float64
                torch.testing.assert_close(probs, expected.float(), rtol=0, atol=1e-6)


def test_masks_memory_visible_and_content_sees_itself():
    perm_mask = torch.ones(1, 3, 3, dtype=torch.bool)
    content, query = XLNetModel.attention_masks(perm_mask, 1, 3, 2, torch.device("cpu"))
    assert not content[0, :, :2].any() and not query[0, :, :2].any()
    assert torch.equal(content[0, :, 2:], ~torch.eye(3, dtype=torch.bool))
    assert query[0, :, 2:].all()


def test_a_token_moves_exactly_the_predictions_that_may_see_it():
    """Changing the token at position 3 changes the query stream's prediction at every position that
    perm_mask lets see position 3, and at no other (position 3's own included: its query stream starts
    from mask_emb)."""
    model = make_model("token")
    model.cfg.mem_len = 0
    tokens, _, _ = make_stream(SEQ)
    perm_mask, segment_ids, target_mapping = random_order_inputs(torch.Generator().manual_seed(5))
    changed = tokens.clone()
    changed[:, 3] = (changed[:, 3] - 4 + 1) % 30 + 4
    with torch.no_grad():
        before, _ = model(tokens, perm_mask, target_mapping, segment_ids)
        after, _ = model(changed, perm_mask, target_mapping, segment_ids)
    moved = (before - after).abs().amax(-1) > 1e-9  # (B, T) predictions that changed
    assert torch.equal(moved, ~perm_mask[:, :, 3])  # exactly those that may see position 3
    assert isinstance(model.layers[0], XLNetLayer)


@pytest.mark.parametrize("positions,origin", [("token", "query"), ("segatron", "query"), ("segatron", "window_end")])
def test_query_stream_at_the_targets_equals_a_run_at_every_position(positions, origin):
    """The query stream runs on the P targets' rows only (its projections, LayerNorm and FFN), W_R R is
    projected once per layer for both streams, and its logits at the targets, given in any order, equal
    those of a run with every position a target, with memory, to 1e-6 in float64."""
    model = make_model(positions, origin)
    tokens, sentence, paragraph = make_stream(REUSE + SEQ)
    perm_mask, segment_ids, everything = random_order_inputs(torch.Generator().manual_seed(3))
    picked = torch.tensor([[5, 2, 6], [1, 3, 4]])  # P = 3 targets per row, not in position order
    mapping = torch.zeros(BATCH, 3, SEQ, dtype=torch.float64).scatter_(2, picked[..., None], 1.0)
    rows, projections = [], []
    model.layers[0].ffn.register_forward_hook(lambda module, args, out: rows.append(args[0].size(0)))
    attention = model.layers[0].attention
    position_rows = attention.position_rows
    attention.position_rows = lambda distances: projections.append(1) or position_rows(distances)
    logits = {}
    for name, target_mapping in (("all", everything), ("picked", mapping)):
        model.reset_memory()
        with torch.no_grad():
            for cols in (slice(0, SEQ), slice(REUSE, REUSE + SEQ)):  # the second segment with memory
                logits[name], _ = model(tokens[:, cols], perm_mask, target_mapping, segment_ids,
                                        sentence[:, cols], paragraph[:, cols], reuse_len=REUSE)
    assert rows[-2:] == [SEQ, 3] and len(projections) == 4  # content T rows, query P rows; one W_R R a forward
    expected = logits["all"].gather(1, picked[..., None].expand(-1, -1, logits["all"].size(-1)))
    torch.testing.assert_close(logits["picked"], expected, rtol=0, atol=1e-6)
