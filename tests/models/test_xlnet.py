"""XLNet's permutation LM: targets, orders and masks against a construction by hand, the factorization
order respected by the model's predictions, the reuse part's memory, the xlnet_plm stream."""
import numpy as np
import pytest
import tiny_models
import torch
from fairseq.data import Dictionary
from omegaconf import OmegaConf

from segatron_fairseq.data.permutation_lm import (
    block_ranks,
    permutation_mask,
    permutation_sample,
    sample_targets,
)
from segatron_fairseq.models.xlnet import XLNetModel


def test_permutation_mask_by_hand():
    """Targets 1, 3, 4 in the order 1, 4, 3 (ranks 0, 1, 4); non-targets 0, 2, 5 first (rank -1)."""
    targets = np.array([False, True, False, True, True, False])
    ranks = np.array([3, 0, 5, 4, 1, 2])
    hidden_from = {0: [1, 3, 4], 1: [1, 3, 4], 2: [1, 3, 4], 3: [3], 4: [3, 4], 5: [1, 3, 4]}
    expected = np.zeros((6, 6), dtype=bool)
    for i, hidden in hidden_from.items():
        expected[i, hidden] = True
    assert np.array_equal(permutation_mask(targets, ranks), expected)
    content, query = XLNetModel.attention_masks(torch.from_numpy(expected)[None], 1, 6, 0, torch.device("cpu"))
    assert torch.equal(query[0], torch.from_numpy(expected))
    assert torch.equal(content[0], torch.from_numpy(expected) & ~torch.eye(6, dtype=torch.bool))


def test_block_ranks_permute_each_chunk_alike():
    ranks = block_ranks(12, 4, np.random.default_rng(0))
    chunks = ranks.reshape(3, 4)
    assert sorted(ranks) == list(range(12))
    assert np.array_equal(chunks - np.arange(3)[:, None] * 4, np.repeat(chunks[:1], 3, axis=0))
    with pytest.raises(ValueError, match="must divide"):
        block_ranks(10, 4, np.random.default_rng(0))


def test_targets_are_spans_of_the_budget_at_word_starts():
    rng = np.random.default_rng(3)
    word_start = rng.random(256) < 0.7
    for _ in range(20):
        targets = sample_targets(256, 43, rng, word_start)
        assert targets.sum() == 43
    spans = np.flatnonzero(np.diff(np.concatenate([[0], targets.astype(int)])) == 1)
    assert len(spans) < 43  # spans, not only single tokens
    assert np.array_equal(sample_targets(256, 43, np.random.default_rng(7), word_start),
                          sample_targets(256, 43, np.random.default_rng(7), word_start))


def order_of(perm_mask, targets):
    """The targets' order as perm_mask tells it: a target sees the targets before it."""
    seen = {i: {j for j in targets if not perm_mask[i, j]} for i in targets}
    return sorted(targets, key=lambda i: len(seen[i]))


def test_permutation_sample_masks():
    """XLNet's 512 = 256 reuse + 256, K = 6: 85 targets, 43 + 42; no query sees its own target; every
    position sees the non-targets of its part; the targets' visibility is a strict order; the reuse part
    sees nothing of the rest and the rest all of it; padding is hidden and never a target."""
    padding = np.zeros(512, dtype=bool)
    padding[-5:] = True
    perm_mask, positions = permutation_sample(512, 256, 85, np.random.default_rng(1), padding=padding)
    assert len(positions) == 85 and (positions < 256).sum() == 43
    is_target = np.zeros(512, dtype=bool)
    is_target[positions] = True
    assert not is_target[padding].any()
    assert perm_mask[positions, positions].all()  # the query stream cannot see itself
    assert perm_mask[:256, 256:].all() and not perm_mask[256:, :256].any()
    assert perm_mask[~padding][:, padding].all() and not perm_mask[np.ix_(padding, padding)].any()
    for part in (slice(0, 256), slice(256, 507)):
        block = perm_mask[part, part]
        block_targets = is_target[part]
        assert not block[:, ~block_targets].any()  # non-targets are seen by all
        assert block[~block_targets][:, block_targets].all()  # and see no target
        order = order_of(block, list(np.flatnonzero(block_targets)))
        for k, i in enumerate(order):  # a target sees exactly the targets before it
            assert set(np.flatnonzero(~block[i] & block_targets)) == set(order[:k])


def tiny_model(positions="token", mem_len=8):
    """xlnet_tiny narrowed (2 layers, width 32, 4 heads of 8, feed-forward 48), 44 symbols, float64."""
    return tiny_models.tiny_model("xlnet_tiny", "--encoder-ffn-embed-dim", 48, "--dropout", 0,
                                  "--attention-dropout", 0, "--mem-len", mem_len, "--positions", positions,
                                  "--init-std", 0.2, vocabulary=tiny_models.dictionary(words=40),
                                  dtype=torch.float64)


@pytest.mark.parametrize("positions", ["token", "segatron"])
def test_a_later_token_in_the_order_leaves_earlier_predictions_unchanged(positions):
    """With memory: changing the token of target j changes the prediction of target i iff j comes earlier
    in the factorization order; changing a non-target changes every prediction of its part."""
    model = tiny_model(positions)
    length, reuse = 16, 8
    g = torch.Generator().manual_seed(4)
    tokens = torch.randint(4, 44, (1, 2 * length), generator=g)
    starts = torch.rand(1, 2 * length, generator=g) < 0.3
    perm_mask, positions_ = permutation_sample(length, reuse, 6, np.random.default_rng(2))
    perm_mask = torch.from_numpy(perm_mask)[None]
    mapping = torch.zeros(1, 6, length, dtype=torch.float64)
    mapping[0, torch.arange(6), torch.from_numpy(positions_)] = 1

    def predictions(segment):
        model.reset_memory()
        with torch.no_grad():
            model(tokens[:, :length], perm_mask, mapping, None, starts[:, :length], starts[:, :length],
                  reuse_len=reuse)
            return model(segment, perm_mask, mapping, None, starts[:, reuse:reuse + length],
                         starts[:, reuse:reuse + length], reuse_len=reuse)[0][0]

    segment = tokens[:, reuse:reuse + length]
    before = predictions(segment)
    kept = 0
    for j in range(length):
        changed = segment.clone()
        changed[0, j] = 4 + (changed[0, j] - 3) % 40
        moved = (predictions(changed) - before).abs().amax(-1) > 1e-9  # (P,)
        expected = ~perm_mask[0, torch.from_numpy(positions_), j]  # target i may see position j
        assert torch.equal(moved, expected), j
        kept += int((~moved).sum())
    assert kept == 36  # the reuse part's 3 targets: the rest (8 each) and 3 + 2 + 1 targets; the rest's: 3 + 2 + 1


def test_the_memory_is_the_reuse_part_and_does_not_see_the_rest():
    model = tiny_model(mem_len=12)
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(4, 44, (2, 16), generator=g)
    perm_mask = torch.from_numpy(permutation_sample(16, 8, 3, np.random.default_rng(0))[0])[None].expand(2, -1, -1)
    changed = tokens.clone()
    changed[:, 8:] = 4 + (changed[:, 8:] - 3) % 40
    memories = []
    for segment in (tokens, changed):
        model.reset_memory()
        with torch.no_grad():
            model(segment, perm_mask, reuse_len=8)
        memories.append(model._memory.get(False))
    assert memories[0].hidden[0].shape == (8, 2, 32)
    for before, after in zip(memories[0].hidden, memories[1].hidden):
        torch.testing.assert_close(before, after, rtol=0, atol=0)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from conftest import binarized_wikitext

    from segatron_fairseq.data import SegmentIndexedDataset

    data = binarized_wikitext(tmp_path_factory.mktemp("xlnet_plm"), 4, 3, seed=12) / "bin"
    return SegmentIndexedDataset(str(data / "valid")), Dictionary.load(str(data / "dict.txt")), data


def test_samples_overlap_by_the_reuse_part_and_are_reproducible(corpus):
    from segatron_fairseq.data import PermutationLMDataset, SegmentStreamDataset

    split, d, _ = corpus

    def dataset(seed=1, vary=True):
        return PermutationLMDataset(split, d.eos(), d.pad(), 2, 16, 8, 3, seed, vary_by_epoch=vary)

    samples = dataset()
    stream = SegmentStreamDataset(split, d.eos(), d.pad(), 2, 8)
    assert len(samples) == (stream.row_len - 16) // 8 + 1 >= 2
    batches = [samples.collater([samples[k]]) for k in range(len(samples))]
    for k, batch in enumerate(batches):
        net_input = batch["net_input"]
        pieces = [stream[k], stream[k + 1]]
        assert torch.equal(net_input["src_tokens"], torch.cat([p["source"] for p in pieces], dim=1))
        assert torch.equal(net_input["sentence_starts"], torch.cat([p["sentence_starts"] for p in pieces], dim=1))
        positions = net_input["target_mapping"].argmax(-1)  # (B, 3)
        assert torch.equal(net_input["target_mapping"].sum((1, 2)), torch.full((2,), 3.0))
        assert torch.equal(batch["target"], net_input["src_tokens"].gather(1, positions))
        assert net_input["perm_mask"].shape == (2, 16, 16) and net_input["reuse_len"] == 8
    again = dataset()
    assert torch.equal(again[1]["perm_mask"], samples[1]["perm_mask"])
    assert not torch.equal(dataset(seed=2)[1]["perm_mask"], samples[1]["perm_mask"])
    for vary in (True, False):
        other_epoch = dataset(vary=vary)
        other_epoch.set_epoch(2)
        assert torch.equal(other_epoch[1]["perm_mask"], samples[1]["perm_mask"]) != vary
    # two data-parallel shards draw different targets and orders for the same batch number
    shards = [PermutationLMDataset(split, d.eos(), d.pad(), 1, 16, 8, 3, 1, num_shards=2, shard_id=k)[0]
              for k in (0, 1)]
    assert not torch.equal(shards[0]["perm_mask"], shards[1]["perm_mask"])


def test_task_and_criterion_take_steps_with_segatron_positions(corpus):
    """xlnet_plm's batches through the criterion, twice (the second with memory): a finite loss per target,
    and a gradient on every parameter (mask_emb, the segment term, the sentence / paragraph parts of W_R)."""
    from segatron_fairseq.criterions.xlnet_plm import XLNetPLMCriterion
    from segatron_fairseq.tasks.xlnet_plm import XLNetPLMConfig, XLNetPLMTask

    *_, data = corpus
    task = XLNetPLMTask.setup_task(XLNetPLMConfig(data=str(data), tokens_per_sample=16, reuse_len=8, batch_size=2,
                                                  batch_size_valid=None, train_subset="train", seed=1))
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    width = tiny_models.as_options(encoder_layers=2, encoder_embed_dim=32, encoder_attention_heads=2,
                                   encoder_head_dim=16, encoder_ffn_embed_dim=48)
    args = tiny_models.tiny_args("xlnet", *tiny_models.as_options(mem_len=12, positions="segatron"), width=width)
    model = tiny_models.build(args, task).train()
    criterion = task.build_criterion(OmegaConf.create({"_name": "xlnet_plm"}))
    assert isinstance(criterion, XLNetPLMCriterion) and task.num_predict == 3
    for k in range(2):
        loss, sample_size, log = criterion(model, dataset.collater([dataset[k]]))
        loss.backward()
        assert sample_size == 6 and torch.isfinite(loss)
    assert model._memory.get(True).hidden[0].shape == (12, 2, 32)
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert list(model.part_dims) == ["token", "sentence", "paragraph"]
    for layer in model.layers:
        by_part = layer.attention.r_proj.weight.grad.split(list(model.part_dims.values()), dim=1)
        assert all(grad.abs().sum() > 0 for grad in by_part)


@pytest.mark.parametrize("options,message", [
    (dict(reuse_len=32), "--reuse-len 32: must not exceed --tokens-per-sample 16"),
    (dict(partial_prediction_k=0), "--partial-prediction-k 0: must be at least 1"),
    (dict(tokens_per_sample=400, reuse_len=200), "shorter than one sample of 400"),
    (dict(perm_size=3), r"--perm-size 3: must divide both parts of a sample, the reuse part \(8\) and the rest"),
])
def test_task_refuses_impossible_samples(corpus, options, message):
    from segatron_fairseq.tasks.xlnet_plm import XLNetPLMConfig, XLNetPLMTask

    *_, data = corpus
    settings = dict(data=str(data), tokens_per_sample=16, reuse_len=8, batch_size=2, batch_size_valid=None,
                    train_subset="train", seed=1)
    with pytest.raises(ValueError, match=message):
        XLNetPLMTask.setup_task(XLNetPLMConfig(**{**settings, **options})).load_dataset("valid")


def hugging_face_copy(ours: XLNetModel):
    """transformers' (4.35.2) XLNetLMHeadModel with the weights of ``ours`` (a ``tiny_model`` in float32, token
    positions), in evaluation mode."""
    from transformers import XLNetConfig as HFConfig
    from transformers import XLNetLMHeadModel

    from segatron_fairseq.conversion.xlnet_names import huggingface_state

    cfg = ours.cfg
    hf = XLNetLMHeadModel(HFConfig(vocab_size=len(ours.output_bias), d_model=cfg.encoder_embed_dim,
                                   n_layer=cfg.encoder_layers, n_head=cfg.encoder_attention_heads,
                                   d_head=cfg.encoder_head_dim, d_inner=cfg.encoder_ffn_embed_dim,
                                   ff_activation="gelu", untie_r=True, attn_type="bi", dropout=0.0, bi_data=False,
                                   clamp_len=-1)).eval()
    hf.load_state_dict(huggingface_state(ours.state_dict()))  # conversion/xlnet_names.py: the one mapping
    return hf


def test_logits_equal_hugging_face_xlnet_with_the_same_weights():
    """--positions token is XLNet: with its weights copied into transformers' XLNetLMHeadModel (4.35.2), the
    same perm_mask, target_mapping and token_type_ids give the same logits, to 1e-5 (float32): the query
    stream without and with memory (HF's mems = our cached layer inputs), the content stream alone, and a
    perm_mask that hides everything (queries that see no key attend to all alike, as XLNet's -1e30)."""
    length, predictions = 16, 6
    ours = tiny_model(mem_len=8).float()
    hf = hugging_face_copy(ours)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, 44, (2, 2 * length), generator=g)
    segments = torch.zeros(2, length, dtype=torch.long)
    segments[:, 11:] = 1
    perm_mask = torch.zeros(2, length, length, dtype=torch.bool)
    mapping = torch.zeros(2, predictions, length)
    for b in range(2):
        mask, positions = permutation_sample(length, 8, predictions, np.random.default_rng(b))
        perm_mask[b] = torch.from_numpy(mask)
        mapping[b, torch.arange(predictions), torch.from_numpy(positions)] = 1
    with torch.no_grad():
        for start in (0, 8):  # the second with our memory of the first's reuse part
            mems = None if start == 0 else list(ours._memory.get(False).hidden)
            segment = tokens[:, start:start + length]
            logits, _ = ours(segment, perm_mask, mapping, segments, reuse_len=8)
            expected = hf(segment, perm_mask=perm_mask.float(), target_mapping=mapping, token_type_ids=segments,
                          mems=mems).logits
            torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5)
        ours.reset_memory()
        logits, _ = ours(tokens[:, :length], segment_ids=segments)
        torch.testing.assert_close(logits, hf(tokens[:, :length], token_type_ids=segments).logits, rtol=0, atol=1e-5)
        ours.reset_memory()
        everything = torch.ones_like(perm_mask)
        logits, _ = ours(tokens[:, :length], everything, mapping, segments)
        expected = hf(tokens[:, :length], perm_mask=everything.float(), target_mapping=mapping,
                      token_type_ids=segments).logits
        assert torch.isfinite(logits).all()
        torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5)
