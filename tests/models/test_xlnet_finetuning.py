"""XLNet's fine-tuning path: the content stream over right-padded encoder inputs without memory, the sentence and
paragraph starts read from the layout's indexes, token types as segment ids, and a pre-training checkpoint
restored into a model whose dictionary has <mask> appended."""
import pytest
import tiny_models
import torch
from test_xlnet import hugging_face_copy, tiny_model
from tiny_models import as_options, dictionary

from segatron_fairseq.models.xlnet import XLNetModel
from segatron_fairseq.segments import MASK_SYMBOL

# [CLS] a a a [SEP] b b . b [SEP]: text b (paragraph 1) holds two sentences
TOKENS = [0, 11, 12, 13, 2, 14, 15, 16, 17, 2]
PARAGRAPH = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
SENTENCE = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]
TOKEN = [0, 0, 1, 2, 2, 0, 1, 2, 0, 0]
TOKEN_TYPE = PARAGRAPH
SENTENCE_STARTS = [5, 8]  # by hand: b's first token and its second sentence
PARAGRAPH_STARTS = [5]


def _encoder_input(pad: int, padding: int = 0):
    def row(values, fill):
        return torch.tensor([values + [fill] * padding])

    return dict(src_tokens=row(TOKENS, pad), paragraph_index=row(PARAGRAPH, 0), sentence_index=row(SENTENCE, 0),
                token_index=row(TOKEN, 0), token_type=row(TOKEN_TYPE, 0))


@pytest.mark.parametrize("positions, origin", [("token", "query"), ("segatron", "query"),
                                               ("segatron", "window_end")])
def test_features_ignore_padding_and_leave_the_memory_alone(positions, origin):
    model = tiny_model(positions)
    model.cfg.segment_distance_origin = origin
    pad = model.padding_idx
    alone = model.token_features(**_encoder_input(pad))
    padded = model.token_features(**_encoder_input(pad, padding=5))
    assert padded.shape == (1, 15, 32)
    torch.testing.assert_close(padded[:, :10], alone, rtol=0, atol=1e-12)
    assert model._memory.get(False) is None and model._memory.get(True) is None
    torch.testing.assert_close(model.token_features(**_encoder_input(pad)), alone, rtol=0, atol=0)
    # in a batch with a longer example: the same features
    longer = {name: torch.cat([values, values], dim=1) for name, values in _encoder_input(pad).items()}
    batch = {name: torch.cat([padded_row, longer[name][:, :15]]) for name, padded_row in
             _encoder_input(pad, padding=5).items()}
    batched = model.token_features(**batch)
    torch.testing.assert_close(batched[:1, :10], alone, rtol=0, atol=1e-12)
    torch.testing.assert_close(batched[1:], model.token_features(**{n: v[:, :15] for n, v in longer.items()}),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("origin", ["query", "window_end"])
def test_segatron_starts_come_from_the_layout(origin):
    """The features equal the pre-training path's content stream given the starts by hand and the token types as
    segment ids; starts off by one sentence change them."""
    model = tiny_model("segatron", mem_len=0)
    model.cfg.segment_distance_origin = origin
    features = model.token_features(**_encoder_input(model.padding_idx))

    def content(sentence_starts, paragraph_starts):
        flags = torch.zeros(2, 1, 10, dtype=torch.bool)
        flags[0, 0, sentence_starts] = True
        flags[1, 0, paragraph_starts] = True
        model.reset_memory()
        out, _ = model(torch.tensor([TOKENS]), segment_ids=torch.tensor([TOKEN_TYPE]), sentence_starts=flags[0],
                       paragraph_starts=flags[1], features_only=True)
        return out

    torch.testing.assert_close(features, content(SENTENCE_STARTS, PARAGRAPH_STARTS), rtol=0, atol=1e-12)
    assert not torch.allclose(features, content([5, 7], PARAGRAPH_STARTS), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="needs token_index next to src_tokens to fine-tune"):
        model.token_features(**{**_encoder_input(model.padding_idx), "token_index": None})


def test_features_equal_hugging_face_xlnet_with_padding_and_token_types():
    """--positions token: the fine-tuning features of right-padded pairs equal transformers' (4.35.2) XLNetModel's
    last hidden states given the same weights, attention_mask and token_type_ids, to 1e-5 (float32)."""
    ours = tiny_model().float()
    hf = hugging_face_copy(ours)
    pad = ours.padding_idx
    tokens = torch.tensor([[0, 11, 12, 13, 2, 14, 15, 2, pad, pad], [0, 21, 22, 2, 23, 24, 25, 26, 27, 2]])
    token_type = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]])
    with torch.no_grad():
        features = ours.token_features(tokens, token_type=token_type)
        expected = hf.transformer(tokens, attention_mask=tokens.ne(pad).long(), token_type_ids=token_type)
    torch.testing.assert_close(features, expected.last_hidden_state, rtol=0, atol=1e-5)


def test_the_classification_head_reads_the_first_token():
    model = tiny_model("segatron")
    model.register_classification_head("glue", num_classes=3)
    model.double().eval()
    inputs = _encoder_input(model.padding_idx, padding=2)
    logits, extra = model(**inputs, classification_head_name="glue")
    assert logits.shape == (1, 3) and extra == {}
    head = model.classification_heads["glue"]
    features = model.token_features(**inputs)
    torch.testing.assert_close(logits, head.out_proj(torch.tanh(head.dense(features[:, 0]))), rtol=0, atol=1e-12)


def _model(positions="token", *appended, origin="query") -> XLNetModel:
    """XLNet of one layer of width 16 over ``dictionary(*appended)``."""
    width = as_options(encoder_layers=1, encoder_embed_dim=16, encoder_attention_heads=2, encoder_head_dim=8,
                       encoder_ffn_embed_dim=24)
    return tiny_models.tiny_model("xlnet", *as_options(positions=positions, segment_distance_origin=origin),
                                  width=width, seed=1, vocabulary=dictionary(*appended))


def test_a_pretraining_checkpoint_restores_into_a_finetuning_model():
    pretrained = _model().state_dict()
    del pretrained["relative_positions"]  # a checkpoint from before the buffer: taken as the model's
    model = _model("token", MASK_SYMBOL)
    model.register_classification_head("glue", num_classes=2)
    own_mask_row, own_head = model.embed_tokens.weight[-1].clone(), model.classification_heads["glue"].dense.weight
    state = dict(pretrained)
    model.upgrade_state_dict_named(state, "")
    model.load_state_dict(state, strict=True)
    assert model.embed_tokens.weight.shape == (41, 16) and model.output_bias.shape == (41,)
    torch.testing.assert_close(model.embed_tokens.weight[:40], pretrained["embed_tokens.weight"], rtol=0, atol=0)
    torch.testing.assert_close(model.embed_tokens.weight[40], own_mask_row, rtol=0, atol=0)
    torch.testing.assert_close(model.classification_heads["glue"].dense.weight, own_head, rtol=0, atol=0)
    other_corpus = {**pretrained, "embed_tokens.weight": pretrained["embed_tokens.weight"][:36]}
    with pytest.raises(ValueError, match=r"the xlnet checkpoint's embed_tokens.weight has 36 rows, this model's 41"):
        model.upgrade_state_dict_named(other_corpus, "")


@pytest.mark.parametrize("trained, given, message", [
    (("token",), ("segatron",), "trained with relative positions 'token' .* this model has 'segatron, query'"),
    (("segatron",), ("segatron", "window_end"), "'segatron, query' .* this model has 'segatron, window_end'"),
])
def test_other_relative_positions_are_refused(trained, given, message):
    state = _model(trained[0], origin=trained[1] if len(trained) > 1 else "query").state_dict()
    model = _model(given[0], origin=given[1] if len(given) > 1 else "query")
    with pytest.raises(ValueError, match=message):
        model.upgrade_state_dict_named(state, "")
