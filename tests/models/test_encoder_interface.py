"""Every registered encoder model implements ``models/encoder_interface.py`` (tiny ones, of
``tests/tiny_models.py``), and its task heads restore through the one ``TaskHeads`` routine, old key layout (heads
among RoBERTa's classification heads) included."""
import pytest
import torch
from fairseq.models import MODEL_REGISTRY
from tiny_models import tiny_model

from segatron_fairseq.models.answer_span_head import SpanHead
from segatron_fairseq.models.cross_thought import CrossThoughtModel
from segatron_fairseq.models.encoder_interface import EncoderInterface, NotOfThisEncoder
from segatron_fairseq.models.segabert import SegaBERTModel
from segatron_fairseq.models.task_heads import TaskHeads

ENCODERS = ["segabert", "segabert_electra", "xlnet", "cloze_two_tower", "cross_thought"]


def tiny(name: str):
    """The model ``name`` at its tiny architecture (``tests/tiny_models.py``, built by its pre-training task)."""
    return tiny_model(f"{name}_tiny")


def test_every_registered_encoder_is_listed_here():
    encoders = {name for name, cls in MODEL_REGISTRY.items() if issubclass(cls, EncoderInterface)}
    assert encoders == set(ENCODERS)


@pytest.mark.parametrize("name", ENCODERS)
def test_each_encoder_implements_the_interface(name):
    model = tiny(name).eval()
    assert isinstance(model, EncoderInterface)
    words = model.word_embeddings()
    d = words.embedding_dim if name == "cross_thought" else model.token_feature_dim
    assert words.embedding_dim <= d and model.layer_norm_eps > 0
    assert type(model).embedded_symbols(model.state_dict()) == words.num_embeddings > 30
    for table in model.index_tables().values():
        assert isinstance(table, torch.nn.Embedding)
    assert isinstance(model.input_end_symbol, str) and isinstance(model.indexes_from_input_start, bool)
    model.register_task_head("span", SpanHead(d))
    assert model.task_head("span").out_proj.in_features == d and "span" in model.head_names()
    with pytest.raises(KeyError, match="no head 'nothing'"):
        model.task_head("nothing")
    src = torch.full((2, 6), 5)
    if name == "cross_thought":  # its input is (B, M, L) short sequences: no per-token features of a text
        with pytest.raises(NotOfThisEncoder, match="a CrossThoughtModel gives no per-token features"):
            model.token_features(src)
        with pytest.raises(NotOfThisEncoder, match="a CrossThoughtModel gives no per-token features"):
            assert model.token_feature_dim is None
        return
    index = {f"{level}_index": torch.zeros(2, 6, dtype=torch.long) for level in ("paragraph", "sentence", "token")}
    assert model.token_features(src, **index).shape == (2, 6, d)


def test_what_an_encoder_lacks_is_one_clear_error():
    class Bare(EncoderInterface, torch.nn.Module):
        pass

    with pytest.raises(NotOfThisEncoder, match="a Bare gives no per-token features"):
        Bare().token_features(torch.zeros(1, 1, dtype=torch.long))
    with pytest.raises(NotOfThisEncoder, match="gives no task heads"):
        Bare().register_task_head("x", torch.nn.Linear(1, 1))
    assert Bare().index_tables() == {} and Bare.embedded_symbols({}) is None


def test_heads_saved_among_robertas_classification_heads_move_to_the_task_heads(caplog):
    """A SegaBERT checkpoint of before 0.3.0 (task heads under classification_heads.<name>.) loads: its span head
    is kept, RoBERTa's dense head stays, a head this model lacks is left out with a warning."""
    saved = tiny("segabert")
    saved.register_task_head("squad", SpanHead(saved.token_feature_dim))
    saved.register_task_head("old_only", SpanHead(saved.token_feature_dim))
    saved.register_classification_head("glue", num_classes=3)
    torch.nn.init.normal_(saved.task_head("squad").out_proj.weight)
    old_layout = {key.replace("task_heads.", "classification_heads."): value
                  for key, value in saved.state_dict().items()}
    assert "classification_heads.squad.out_proj.weight" in old_layout

    model = tiny("segabert")
    model.register_task_head("squad", SpanHead(model.token_feature_dim))
    model.register_task_head("ner", SpanHead(model.token_feature_dim))
    model.register_classification_head("glue", num_classes=3)
    own_ner = model.task_head("ner").out_proj.weight.clone()
    model.upgrade_state_dict_named(old_layout, "")
    model.load_state_dict(old_layout)
    torch.testing.assert_close(model.task_head("squad").out_proj.weight, saved.task_head("squad").out_proj.weight)
    torch.testing.assert_close(model.task_head("glue").dense.weight, saved.task_head("glue").dense.weight)
    torch.testing.assert_close(model.task_head("ner").out_proj.weight, own_ner)  # the model's own, kept
    assert "leaving out task_heads.old_only.out_proj.weight" in caplog.text
    assert not any(key.startswith("classification_heads.squad") for key in old_layout)


def test_task_heads_restore_keeps_same_shaped_heads_only(caplog):
    heads = TaskHeads({"a": torch.nn.Linear(2, 3), "b": torch.nn.Linear(2, 2)})
    checkpoint = {"x.a.weight": torch.ones(3, 2), "x.a.bias": torch.ones(3), "x.b.weight": torch.ones(4, 2),
                  "x.c.weight": torch.ones(1), "other": torch.zeros(1)}
    heads.restore(checkpoint, "x.")
    assert checkpoint["x.a.weight"].eq(1).all() and checkpoint["x.b.weight"].shape == (2, 2)
    assert torch.equal(checkpoint["x.b.bias"], heads["b"].bias) and "x.c.weight" not in checkpoint
    assert "other" in checkpoint and "leaving out x.c.weight" in caplog.text
    TaskHeads.move_heads(checkpoint, "x.", "y.", ["a"])
    assert {key for key in checkpoint if key.startswith("y.")} == {"y.a.weight", "y.a.bias"}


def test_cross_thought_ranks_and_embeds_through_its_model():
    model = tiny("cross_thought").eval()
    assert isinstance(model, CrossThoughtModel) and model.special_tokens() == (5, False)
    embeddings = model.sequence_embeddings(torch.full((3, 1, 4), 5))  # (B, M, N, d)
    assert embeddings.shape == (3, 1, 5, model.word_embeddings().embedding_dim)
    assert model.rank(embeddings[:1, 0], embeddings[:, 0]).shape == (1, 3)


def test_segabert_asks_for_its_tables_and_masked_lm_head():
    model = tiny("segabert")
    assert isinstance(model, SegaBERTModel) and set(model.index_tables()) == {"paragraph", "sentence", "token"}
    assert model.has_masked_lm_head() and not tiny("segabert_electra").has_masked_lm_head()
