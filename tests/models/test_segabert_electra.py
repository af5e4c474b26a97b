"""ELECTRA on the SegaBERT encoder: the generator and discriminator share the embedding scope (the same Parameter
objects), the generator's sizes, the parameter counts of the small and base architectures against ELECTRA's own
(transformers==4.35.2's ElectraForPreTraining + ElectraForMaskedLM), and fairseq-train of both variants."""
import re

import pytest
import torch
from conftest import fairseq_train
from tiny_models import dictionary, tiny_model

from segatron_fairseq.segments import MASK_SYMBOL

ARCHS = ("segabert_electra_tiny", "segabert_bert_electra_tiny")
# fairseq 0.12.2's TransformerEncoderLayer registers zero copies of its weights for BetterTransformer
# (in_proj_weight, fc1_weight, ...), unused in training; the counts leave them out
_BETTER_TRANSFORMER_COPY = re.compile(r"\.layers\.\d+\.(in_proj|out_proj|fc1|fc2)_(weight|bias)$")


def _dictionary(size):
    """``size`` types: fairseq's four specials, words, the mask symbol last."""
    return dictionary(MASK_SYMBOL, words=size - 5)


def _build(arch, vocabulary, *extra):
    """``arch`` at its own width, as fairseq-train builds it for segabert_mlm with the electra criterion."""
    return tiny_model(arch, "--criterion", "electra", *extra, width=(), vocabulary=vocabulary)


def _count(module) -> int:
    return sum(p.numel() for name, p in module.named_parameters() if not _BETTER_TRANSFORMER_COPY.search(name))


@pytest.mark.parametrize("arch", ARCHS)
def test_generator_and_discriminator_share_the_whole_embedding_scope(arch):
    model = _build(arch, _dictionary(40), "--num-token-types", 2)
    discriminator, generator = model.encoder, model.generator
    d, g = discriminator.sentence_encoder, generator.sentence_encoder
    assert g.embed_tokens.weight is d.embed_tokens.weight and generator.lm_head.weight is d.embed_tokens.weight
    assert g.layernorm_embedding.weight is d.layernorm_embedding.weight
    assert generator.token_type_embeddings.weight is discriminator.token_type_embeddings.weight
    if arch.startswith("segabert_bert_"):
        assert len(discriminator.segment_embeddings) == 0 and g.embed_positions.weight is d.embed_positions.weight
    else:
        assert d.embed_positions is None and g.embed_positions is None
        for name, table in discriminator.segment_embeddings.items():
            assert generator.segment_embeddings[name].weight is table.weight
    # tiny: H 64, E 32, the generator a quarter as wide (16, one head, feed-forward 64), each its own projection
    assert d.embed_tokens.embedding_dim == 32 and g.embedding_projection is not d.embedding_projection
    assert tuple(d.embedding_projection.weight.shape) == (64, 32)
    assert tuple(g.embedding_projection.weight.shape) == (16, 32)
    assert len(g.layers) == len(d.layers) == 2 and g.layers[0].fc1.weight.shape == (64, 16)
    assert g.layers[0].self_attn.num_heads == 1 and tuple(generator.lm_head.dense.weight.shape) == (32, 16)
    assert discriminator.lm_head is None and tuple(discriminator.rtd_head.dense_prediction.weight.shape) == (1, 64)
    # each shared parameter once among the model's parameters
    assert len(list(model.parameters())) == len({id(p) for p in model.parameters()})


def test_every_matrix_starts_from_berts_initialisation():
    """N(0, 0.02) for every linear layer, the generator's masked-LM head included (attached after the model's
    initialisation ran)."""
    model = _build("segabert_electra_small", _dictionary(400))
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and module.weight.numel() > 1000:
            assert module.weight.std().item() == pytest.approx(0.02, rel=0.1), name


def test_generator_sizes_follow_the_fraction_or_the_options():
    from segatron_fairseq.models.segabert_electra import generator_sizes

    model = _build("segabert_bert_electra_tiny", _dictionary(40), "--generator-embed-dim", 32,
                   "--generator-attention-heads", 2, "--generator-layers", 1)
    assert len(model.generator.sentence_encoder.layers) == 1
    assert model.generator.sentence_encoder.layers[0].fc1.weight.shape == (128, 32)
    assert model.generator.sentence_encoder.embedding_projection is None  # E 32 = its width
    import argparse

    with pytest.raises(ValueError, match="width 30 is not divisible by its 4 heads"):
        generator_sizes(argparse.Namespace(encoder_embed_dim=64, generator_embed_dim=30,
                                           generator_attention_heads=4, encoder_layers=2))


@pytest.mark.parametrize("extra,says", [
    (["--generator-width-fraction", 0], "--generator-width-fraction 0.0: must be above 0"),
    (["--generator-width-fraction", -0.5], "--generator-width-fraction -0.5: must be above 0"),
    (["--generator-embed-dim", -16], "--generator-embed-dim -16: must be at least 1"),
    (["--generator-layers", -1], "--generator-layers -1: must be at least 1"),
])
def test_wrong_generator_sizes_are_refused_by_name(extra, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        _build("segabert_electra_tiny", _dictionary(40), *extra)


def test_a_generator_wider_than_the_discriminator_is_built():
    """ELECTRA's paper tries generators up to wider than the discriminator; nothing refuses it."""
    model = _build("segabert_electra_tiny", _dictionary(40), "--generator-width-fraction", 1.5)
    assert model.generator.sentence_encoder.layers[0].embed_dim == 96


@pytest.mark.end_to_end
def test_parameter_counts_of_small_and_base_against_electra():
    """With BERT's 30,522-symbol vocabulary the baseline has exactly the parameters of ELECTRA's discriminator and
    generator together (transformers' classes, their shared embeddings counted once) plus fairseq's 2 position rows
    before the first position (its padding offset); with the index tables, 50 + 100 + 256 rows replace the 512
    positions. small: 14,196,219 (ELECTRA) -> 14,196,475 / 14,182,651; base: 119,386,427 -> 119,387,963 / 119,305,019.
    """
    import transformers
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    assert transformers.__version__ == "4.35.2"
    dictionary = _dictionary(30522)
    sizes = {"small": dict(embedding_size=128, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                           generator=64),
             "base": dict(embedding_size=768, hidden_size=768, num_attention_heads=12, intermediate_size=3072,
                          generator=256)}
    expected = {"small": (14196219, 14196475, 14182651), "base": (119386427, 119387963, 119305019)}
    for size, config in sizes.items():
        width = config.pop("generator")
        with torch.device("meta"):
            discriminator = ElectraForPreTraining(ElectraConfig(vocab_size=30522, num_hidden_layers=12, **config))
            generator = ElectraForMaskedLM(ElectraConfig(
                vocab_size=30522, num_hidden_layers=12, embedding_size=config["embedding_size"], hidden_size=width,
                num_attention_heads=max(1, width // 64), intermediate_size=4 * width))
        electra = _count(discriminator) + _count(generator) - _count(discriminator.electra.embeddings)
        bert, segabert = _count(_build(f"segabert_bert_electra_{size}", dictionary)), _count(
            _build(f"segabert_electra_{size}", dictionary))
        e = config["embedding_size"]
        assert bert == electra + 2 * e and segabert == electra - 512 * e + (50 + 100 + 256) * e
        assert (electra, bert, segabert) == expected[size]


@pytest.mark.parametrize("arch", ARCHS)
def test_fairseq_train_logs_the_electra_measures(arch, segabert_corpus, tmp_path):
    out = fairseq_train(segabert_corpus, task="segabert_mlm", arch=arch, criterion="electra", save_dir=tmp_path,
                        extra=["--leave-unmasked-prob", 0.15, "--random-token-prob", 0, "--tokens-per-sample", 32,
                               "--batch-size", 8, "--max-update", 2, "--no-save", "--log-format", "simple",
                               "--log-interval", 1])
    for name in ("gen_loss", "gen_ppl", "rtd_loss", "rtd_accuracy", "replaced"):
        assert re.search(rf"\| {name} [\d.]+ ", out), name
