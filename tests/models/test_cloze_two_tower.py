"""The cloze two-tower model: its masks pair by pair, what each prediction depends on, padding."""
import numpy as np
import pytest
import torch
from fairseq.data import Dictionary
from tiny_models import as_options, tiny_model

from segatron_fairseq.data.cloze_blocks import block_layout
from segatron_fairseq.models.cloze_two_tower import ClozeTwoTower, ClozeTwoTowerModel
from segatron_fairseq.modules.cloze_combination import (
    backward_tower_mask,
    combination_mask,
    forward_tower_mask,
)

PAD, VOCAB = 1, 40


def dictionary(size=VOCAB) -> Dictionary:
    """<s> <pad> </s> <unk> and words of one to four letters up to ``size`` types."""
    words = Dictionary()
    for i in range(size - words.nspecial):
        words.add_symbol("abcd"[: i % 4 + 1] + "xyz"[i % 3] * (i // 12 + 1) + str(i))
    return words


def tiny_cloze_model(**fields) -> ClozeTwoTowerModel:
    """The tiny architecture at its own width (d 64) with config ``fields``, over ``dictionary()``."""
    return tiny_model("cloze_two_tower_tiny", *as_options(**fields), width=(), vocabulary=dictionary())


def tiny(**fields) -> ClozeTwoTower:
    """The network of ``tiny_cloze_model``."""
    return tiny_cloze_model(**fields).network


def tokens(*rows):
    """Right-padded (B, T) ids."""
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [PAD] * (width - len(r)) for r in rows])


def test_masks_pair_by_pair_against_a_hand_construction():
    T = 5
    for i in range(T):
        for j in range(T):
            assert bool(forward_tower_mask(T)[i, j]) == (j > i)  # the forward tower sees j <= i
            assert bool(backward_tower_mask(T)[i, j]) == (j < i)  # the backward tower sees j >= i
            # keys 0..T-1 are F_0..F_T-1, keys T..2T-1 are B_0..B_T-1: F_j seen iff j < i, B_j iff j > i
            assert bool(combination_mask(T, "full")[i, j]) == (j >= i)
            assert bool(combination_mask(T, "full")[i, T + j]) == (j <= i)
    assert combination_mask(T, "none") is None
    with pytest.raises(ValueError, match="combination mask 'curr'"):
        combination_mask(T, "curr")


def _dependencies(network, name, length):
    """(T, T) bool: output ``name`` at position i depends on input position j (gradient through the
    towers' input embedding)."""
    src = torch.arange(4, 4 + length).unsqueeze(0)
    x = network.embed(src).detach().requires_grad_(True)
    network.tower_inputs = lambda *args, **kwargs: (x, x)
    depends = torch.zeros(length, length, dtype=torch.bool)
    for i in range(length):
        x.grad = None
        network(src, bilm=True)[name][0, i].sum().backward()
        depends[i] = x.grad[0].abs().sum(-1) > 0
    return depends


@pytest.mark.parametrize("name,sees", [("forward", lambda i, j: j <= i), ("backward", lambda i, j: j >= i),
                                       ("cloze", lambda i, j: j != i)])
def test_each_output_depends_on_exactly_the_positions_of_its_mask(name, sees):
    T = 6
    depends = _dependencies(tiny(), name, T)
    expected = torch.tensor([[sees(i, j) for j in range(T)] for i in range(T)])
    assert torch.equal(depends, expected)


def test_unmasked_combination_sees_every_position():
    depends = _dependencies(tiny(combination_mask="none"), "cloze", 5)
    assert depends.all()


def _cloze_log_probs(network, src):
    return network.log_probs(network(src)["cloze"], src)


def test_changing_a_token_leaves_its_own_prediction_and_moves_the_others():
    network = tiny()
    src = tokens([5, 9, 12, 7, 30, 22, 8])
    changed = src.clone()
    changed[0, 3] = 17
    with torch.no_grad():
        before = network(src)["cloze"]
        after = network(changed)["cloze"]
    # the distribution predicted at position 3 does not move; every other position's does
    assert torch.allclose(before[0, 3], after[0, 3], atol=1e-6)
    others = [i for i in range(src.size(1)) if i != 3]
    assert all(not torch.allclose(before[0, i], after[0, i], atol=1e-4) for i in others)
    # so its score for the token it holds is that of a prediction made without it
    lp_before = network.log_probs(before, src)
    lp_after = network.log_probs(after, src)
    assert torch.allclose(lp_before[0, 3], lp_after[0, 3], atol=1e-6)

    unmasked = tiny(combination_mask="none")
    with torch.no_grad():
        moved = unmasked(src)["cloze"][0, 3], unmasked(changed)["cloze"][0, 3]
    assert not torch.allclose(*moved, atol=1e-4)


def _block(words, sentence_ends, paragraph_ends=()):
    """The model's input for one block of ``words`` whose sentences end after the words at ``sentence_ends`` and
    whose paragraphs end after those at ``paragraph_ends`` (positions in ``words``), laid out as pre-training
    lays it out."""
    indexes = {"paragraph": [], "sentence": [], "token": []}
    p = s = t = 0
    for k in range(len(words)):
        indexes["paragraph"].append(p)
        indexes["sentence"].append(s)
        indexes["token"].append(t)
        p, s, t = (p + 1, 0, 0) if k in paragraph_ends else (p, s + 1, 0) if k in sentence_ends else (p, s, t + 1)
    layout = block_layout(np.array(words), {k: np.array(v) for k, v in indexes.items()}, 0,
                          {"paragraph": 50, "sentence": 100, "token": 64})
    return {"src_tokens": torch.tensor(layout.tokens)[None],
            **{f"{k}_index": torch.tensor(v)[None] for k, v in layout.indexes.items()}}


LEAK_OPTIONS = {"segment_positions": True, "token_positions": "sentence"}


def _boundary_variants(i):
    """Blocks of 12 words where word i and every boundary a sentence splitter could decide from it differ:
    sentence or paragraph ends after word i - 1, i or i + 1."""
    words = [5, 9, 12, 7, 30, 22, 8, 14, 6, 19, 11, 25]
    variants = []
    for changed, ends, paragraph_ends in [(None, {8}, ()), (17, {i, 8}, ()), (26, {i - 1, 8}, ()),
                                          (33, {i + 1, 8}, ()), (17, {8}, {i}), (20, {i - 1, i + 1, 8}, {i})]:
        block_words = list(words)
        if changed is not None:
            block_words[i] = changed
        variants.append(_block(block_words, ends, paragraph_ends))
    return variants


@pytest.mark.parametrize("i", [3, 5])
def test_no_index_tells_the_prediction_where_its_token_ends_a_sentence(i):
    """Changing word i together with the sentence and paragraph ends next to it (those a splitter decides
    from word i) leaves the prediction of word i where it was; the other positions' predictions move."""
    network = tiny(**LEAK_OPTIONS)
    with torch.no_grad():
        outputs = [network(**block)["cloze"][0] for block in _boundary_variants(i)]
    position = i + 1  # after the first <s>
    for other in outputs[1:]:
        torch.testing.assert_close(other[position], outputs[0][position], atol=1e-6, rtol=0)
        assert not torch.allclose(other[position + 1], outputs[0][position + 1], atol=1e-4)


def test_the_forward_indexes_in_the_backward_tower_would_tell_it(monkeypatch):
    """The check above can fail: a backward tower reading the forward tower's indexes (what version 1 did)
    moves the prediction."""
    import segatron_fairseq.models.cloze_two_tower as cloze_module

    monkeypatch.setattr(cloze_module, "backward_tower_indexes", lambda indexes, padding, limits: indexes)
    network = tiny(**LEAK_OPTIONS)
    with torch.no_grad():
        first, moved = (network(**block)["cloze"][0, 4] for block in _boundary_variants(3)[:2])
    assert not torch.allclose(first, moved, atol=1e-4)


def test_checkpoints_from_before_index_layout_2():
    """Without its version key, a checkpoint of a model that reads no index loads; one that does is refused."""
    for options, loads in [({}, True), (LEAK_OPTIONS, False)]:
        model = tiny_cloze_model(**options)  # fairseq's load_state_dict upgrades "network.*"
        state = {k: v for k, v in model.state_dict().items() if k != "network.index_layout_version"}
        if loads:
            model.load_state_dict(state)
            assert int(model.network.index_layout_version) == 2
        else:
            with pytest.raises(ValueError, match="from before index layout 2"):
                model.load_state_dict(state)
    # the token positions a checkpoint was trained with are checked: the weights would load either way
    state = tiny(token_positions="sentence").state_dict()
    with pytest.raises(ValueError, match="trained with --token-positions sentence; this model has --token-positions "
                                         "absolute: give the checkpoint's"):
        tiny_cloze_model().load_state_dict({f"network.{k}": v for k, v in state.items()})
    state = tiny(**LEAK_OPTIONS).state_dict()
    state["index_layout_version"] = torch.tensor(3)
    with pytest.raises(ValueError, match="checkpoint of index layout 3; this code reads layout 2"):
        tiny(**LEAK_OPTIONS).upgrade_state_dict_named(state, "")


@pytest.mark.parametrize("options", [{}, {"combine_query": "concat"},
                                     {"segment_positions": True, "token_positions": "sentence"}])
def test_uneven_batch_gives_each_example_its_outputs_alone(options):
    network = tiny(**options)
    rows = [[5, 9, 12, 7, 30, 22, 8], [11, 6, 19, 4], [13]]
    src = tokens(*rows)
    indexes = {name: torch.zeros_like(src) for name in ("paragraph_index", "sentence_index", "token_index")}
    indexes["sentence_index"][:, 2:] = 1
    indexes["paragraph_index"][:, 4:] = 1
    indexes["token_index"] = torch.tensor([[0, 1, 0, 1, 2, 3, 4]]).expand_as(src).clone()
    with torch.no_grad():
        batched = network(src, bilm=True, **indexes)
        for b, row in enumerate(rows):
            n = len(row)
            alone = network(src[b:b + 1, :n], bilm=True, **{k: v[b:b + 1, :n] for k, v in indexes.items()})
            for name in ("cloze", "forward", "backward"):
                assert torch.allclose(batched[name][b, :n], alone[name][0], atol=1e-5), (name, b)


def _sinusoid(positions, d):
    """The fairseq sinusoid of each position p (row p + PAD + 1 of its table), by hand: sin then cos halves."""
    half = d // 2
    rates = torch.exp(torch.arange(half, dtype=torch.float) * -(torch.log(torch.tensor(10000.0)) / (half - 1)))
    angles = (positions + PAD + 1).float().unsqueeze(-1) * rates
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


@pytest.mark.parametrize("token_positions", ["absolute", "sentence"])
def test_input_is_scaled_embedding_plus_sinusoid_of_its_position(token_positions):
    network = tiny(token_positions=token_positions)
    src = tokens([5, 9, 12, 7, 30])
    token_index = torch.tensor([[0, 1, 0, 1, 2]])
    positions = token_index if token_positions == "sentence" else torch.arange(5).unsqueeze(0)
    expected = network.embed_tokens(src) * 64 ** 0.5 + _sinusoid(positions, 64)
    torch.testing.assert_close(network.embed(src, token_index=token_index), expected)


def test_segment_positions_add_paragraph_and_sentence_tables_to_both_towers():
    network = tiny(segment_positions=True)
    assert set(network.segment_embeddings) == {"paragraph", "sentence"}
    assert network.segment_embeddings["paragraph"].num_embeddings == 50
    assert network.segment_embeddings["sentence"].num_embeddings == 100
    src = tokens([5, 9, 12, 7, 30])
    paragraph, sentence = torch.tensor([[0, 0, 0, 1, 1]]), torch.tensor([[0, 0, 1, 0, 0]])
    plain = tiny().embed(src)
    with_indexes = network.embed(src, paragraph_index=paragraph, sentence_index=sentence)
    added = network.segment_embeddings["paragraph"](paragraph) + network.segment_embeddings["sentence"](sentence)
    torch.testing.assert_close(with_indexes, plain + added)
    token = torch.tensor([[0, 1, 0, 0, 1]])
    with torch.no_grad():
        base = network(src, paragraph_index=paragraph, sentence_index=sentence, token_index=token, bilm=True)
        # the paragraph break before position 3 becomes a sentence break
        moved = network(src, paragraph_index=torch.zeros_like(paragraph),
                        sentence_index=torch.tensor([[0, 0, 1, 2, 2]]), token_index=token, bilm=True)
    # the forward tower's last state and the backward tower's first see the moved paragraph
    assert not torch.allclose(base["forward"][0, -1], moved["forward"][0, -1])
    assert not torch.allclose(base["backward"][0, 0], moved["backward"][0, 0])
    with pytest.raises(ValueError, match="--segment-positions needs paragraph_index"):
        network(src)
    with pytest.raises(ValueError, match=r"paragraph_index 50 exceeds the table size 50 \(--max-paragraph-index\)"):
        network(src, paragraph_index=torch.full_like(src, 50), sentence_index=sentence, token_index=token)
    with pytest.raises(ValueError, match="token_index is needed next to src_tokens: the backward tower counts"):
        network(src, paragraph_index=paragraph, sentence_index=sentence)


def test_without_segment_positions_the_indexes_change_nothing():
    network = tiny()
    src = tokens([5, 9, 12, 7, 30])
    with torch.no_grad():
        a = network(src, paragraph_index=torch.zeros_like(src))["cloze"]
        b = network(src, paragraph_index=torch.ones_like(src))["cloze"]
    assert torch.equal(a, b)


CHAR_CNN = {"input_embedder": "char-cnn", "adaptive_softmax_cutoff": "10,20"}


def test_char_cnn_input_with_the_paper_filters_and_an_adaptive_softmax():
    from fairseq.modules import AdaptiveSoftmax, CharacterTokenEmbedder

    from segatron_fairseq.models.cloze_two_tower import PAPER_ADAPTIVE_CUTOFF

    network = tiny(**CHAR_CNN)
    cnn = network.embed_tokens
    assert isinstance(cnn, CharacterTokenEmbedder) and cnn.embedding_dim == 64
    assert [(c.kernel_size[0], c.out_channels) for c in cnn.convolutions] == [
        (1, 64), (2, 128), (3, 192), (4, 256), (5, 256), (6, 256), (7, 256)]
    assert len(cnn.highway.layers) == 2 and cnn.char_embeddings.embedding_dim == 128
    assert isinstance(network.adaptive_softmax, AdaptiveSoftmax) and network.adaptive_softmax.cutoff == [10, 20, 40]
    # the paper's bands: 60K types at d = 1024, 160K at 256, the rest at 64 (factor 4)
    assert PAPER_ADAPTIVE_CUTOFF == "60000,220000"
    paper = AdaptiveSoftmax(300, 1024, [60, 220], 0.0, factor=4.0)
    assert [band[0].out_features for band in paper.tail] == [256, 64]
    assert paper.head.out_features == 60 + 2


def test_adaptive_log_probs_are_fairseqs_full_distribution_at_the_targets():
    network = tiny(adaptive_softmax_cutoff="10,20")
    features = torch.randn(2, 5, 64)
    target = torch.tensor([[4, 12, 25, 9, 39], [10, 19, 20, 5, 30]])
    full = network.adaptive_softmax.get_log_prob(features, None)
    torch.testing.assert_close(network.log_probs(features, target), full.gather(-1, target.unsqueeze(-1)).squeeze(-1))
    torch.testing.assert_close(full.exp().sum(-1), torch.ones(2, 5))


@pytest.mark.parametrize("options", [{}, CHAR_CNN])
def test_char_cnn_keeps_the_mask(options):
    """With the embedder in the graph: changing token j moves the cloze output of every position but j."""
    T = 5
    network = tiny(**options).eval()
    src = torch.arange(4, 4 + T).unsqueeze(0)
    with torch.no_grad():
        before = network(src)["cloze"]
        depends = torch.zeros(T, T, dtype=torch.bool)
        for j in range(T):
            changed = src.clone()
            changed[0, j] = 4 + T + j
            depends[:, j] = (network(changed)["cloze"] - before)[0].abs().amax(-1) > 1e-6
    assert torch.equal(depends, ~torch.eye(T, dtype=torch.bool))


def test_char_cnn_and_adaptive_softmax_refusals():
    with pytest.raises(ValueError, match="--input-embedder char-cnn needs --adaptive-softmax-cutoff"):
        tiny(input_embedder="char-cnn")
    with pytest.raises(ValueError, match="--adaptive-softmax-cutoff 20,10: band ends must rise and stay below the "
                                         "dictionary's 40 types"):
        tiny(adaptive_softmax_cutoff="20,10")
    with pytest.raises(ValueError, match="--adaptive-softmax-cutoff 10,40: band ends"):
        tiny(adaptive_softmax_cutoff="10,40")
