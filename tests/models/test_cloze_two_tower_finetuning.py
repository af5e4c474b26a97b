"""Fine-tuning the cloze two-tower model: the GLUE head reads exactly the boundary outputs, starts at zero,
scales by 16 and sees the combination unmasked; a pre-trained table gets the fine-tuning symbols' rows."""
import pytest
import torch
from tiny_models import as_options, dictionary, tiny_model

from segatron_fairseq.models.cloze_two_tower import LM_OUTPUT_SCALE, ClozeTwoTowerModel
from segatron_fairseq.segments import MASK_SYMBOL, SEP_SYMBOL

PAD = 1


def model(*appended, seed=0, **options) -> ClozeTwoTowerModel:
    """cloze_two_tower_tiny (in training mode) over ``dictionary(*appended)``, with ``options`` (config fields)."""
    return tiny_model("cloze_two_tower_tiny", *as_options(**options), width=(), seed=seed,
                      vocabulary=dictionary(*appended)).train()


def pairs_batch(net):
    """Two right-padded pairs ``<s> a <sep> b <s>``."""
    sep = net.separator
    rows = [[0, 5, 6, 7, sep, 8, 9, 0], [0, 10, sep, 11, 0]]
    return torch.tensor([r + [PAD] * (8 - len(r)) for r in rows])


def test_pair_head_reads_the_unmasked_outputs_at_both_s_and_sep_scaled_by_16():
    net = model(SEP_SYMBOL)
    net.register_classification_head("glue", num_classes=3, boundaries=3)
    net.eval()
    head = net.classification_heads["glue"]
    src = pairs_batch(net)
    with torch.no_grad():
        logits, extra = net(src, features_only=True, classification_head_name="glue")
        assert logits.shape == (2, 3) and extra == {} and not logits.any()  # zero weights and bias at step 0
        torch.nn.init.normal_(head.out_proj.weight)
        torch.nn.init.normal_(head.out_proj.bias)
        logits, _ = net(src, features_only=True, classification_head_name="glue")
        fwd, bwd, padding = net.network.towers(src)
        unmasked = net.network.combination(fwd, bwd, padding, "none").transpose(0, 1)
        by_hand = torch.stack([torch.cat([unmasked[0, 0], unmasked[0, 4], unmasked[0, 7]]),
                               torch.cat([unmasked[1, 0], unmasked[1, 2], unmasked[1, 4]])])
        torch.testing.assert_close(logits, head.out_proj(LM_OUTPUT_SCALE * by_hand))
        masked = net.network.combination(fwd, bwd, padding, "full").transpose(0, 1)
        assert not torch.allclose(masked[:, 0], unmasked[:, 0])
    assert LM_OUTPUT_SCALE == 16 and head.dropout.p == 0.1


def test_single_text_head_reads_first_and_last_and_the_output_moves_with_its_own_token():
    net = model(SEP_SYMBOL, combination_mask="full")  # the LM's mask; the heads read the unmasked output
    net.register_classification_head("glue", num_classes=2)
    net.eval()
    torch.nn.init.normal_(net.classification_heads["glue"].out_proj.weight)
    src = torch.tensor([[0, 5, 6, 7, 0], [0, 8, 0, PAD, PAD]])
    assert net.boundary_positions(src, 2).tolist() == [[0, 4], [0, 2]]
    changed = src.clone()
    changed[0, 4] = 9  # the last boundary's own token: a masked combination would not see it there
    with torch.no_grad():
        before, after = net.token_features(src), net.token_features(changed)
    assert not torch.allclose(before[0, 4], after[0, 4])
    with pytest.raises(ValueError, match="exactly one <sep>"):
        net.boundary_positions(src, 3)


def test_restoring_appends_the_fine_tuning_rows_and_refuses_another_corpus():
    pretrained = model(seed=1)
    finetuned = model(SEP_SYMBOL, MASK_SYMBOL, seed=2)
    finetuned.register_classification_head("glue", num_classes=2, boundaries=3)
    own = finetuned.network.embed_tokens.weight.detach().clone()
    finetuned.load_state_dict(pretrained.state_dict())
    table = finetuned.network.embed_tokens.weight
    rows = pretrained.network.embed_tokens.weight.size(0)
    assert table.size(0) == rows + 2
    torch.testing.assert_close(table[:rows], pretrained.network.embed_tokens.weight)
    torch.testing.assert_close(table[rows:], own[rows:])
    assert not finetuned.classification_heads["glue"].out_proj.weight.any()  # its own head, at zero
    # a fine-tuned checkpoint's head loads back
    torch.nn.init.normal_(finetuned.classification_heads["glue"].out_proj.weight)
    again = model(SEP_SYMBOL, MASK_SYMBOL, seed=3)
    again.register_classification_head("glue", num_classes=2, boundaries=3)
    again.load_state_dict(finetuned.state_dict())
    torch.testing.assert_close(again.classification_heads["glue"].out_proj.weight,
                               finetuned.classification_heads["glue"].out_proj.weight)
    other = model(*[f"x{i}" for i in range(3)], SEP_SYMBOL)  # another corpus: 3 more words, then <sep>
    with pytest.raises(ValueError, match=r"network.embed_tokens.weight has 40 rows, this model's 44 \(1 fine-tuning "
                                         r"symbols appended to the dictionary\): the checkpoint was trained on another "
                                         r"corpus"):
        other.load_state_dict(pretrained.state_dict())


def test_char_cnn_models_get_the_row_of_their_adaptive_softmax():
    options = {"input_embedder": "char-cnn", "adaptive_softmax_cutoff": "10,20"}
    pretrained, finetuned = model(**options), model(SEP_SYMBOL, seed=2, **options)
    finetuned.register_classification_head("glue", num_classes=2)
    finetuned.load_state_dict(pretrained.state_dict())
    band = finetuned.network.adaptive_softmax.tail[-1][2].weight
    torch.testing.assert_close(band[:-1], pretrained.network.adaptive_softmax.tail[-1][2].weight)


@pytest.mark.parametrize("kind", ["linear", "bilstm_crf"])
def test_token_heads_read_the_unmasked_features_at_the_words(kind):
    """What token_labelling's criterion does with the cloze model, in-process: each head's loss and labels from
    ``token_features`` (SegaBERT's net_input, token_type ignored) at the words' first sub-words."""
    from segatron_fairseq.models.token_label_heads import build_token_head, word_features

    net = model(MASK_SYMBOL)
    net.register_task_head("ner", build_token_head(kind, net.token_feature_dim, 5, 0.1, 8, 8))
    src = torch.tensor([[0, 5, 6, 7, 0], [0, 8, 0, PAD, PAD]])
    net_input = {"src_tokens": src, "src_lengths": torch.tensor([5, 3]), "token_type": torch.zeros_like(src),
                 **{f"{level}_index": torch.zeros_like(src) for level in ("paragraph", "sentence", "token")}}
    features = word_features(net.token_features(**net_input), torch.tensor([[1, 2, 3], [1, 0, 0]]))
    mask = torch.tensor([[True, True, True], [True, False, False]])
    head = net.classification_heads["ner"]
    loss = head.loss(features, mask, torch.tensor([[1, 0, 2], [4, -1, -1]]))
    loss.backward()
    assert loss.item() > 0 and net.network.embed_tokens.weight.grad[5].abs().sum() > 0
    assert [len(path) for path in head.decode(features.detach(), mask)] == [3, 1]
    assert net.input_end_symbol == "<s>"
