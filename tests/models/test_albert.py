"""ALBERT on the SegaBERT encoder: cross-layer sharing (--share-encoder-layers, --encoder-layer-groups) and the
segabert_albert_* / segabert_bert_albert_* architectures."""
import argparse
import re

import pytest
import torch
from tiny_models import dictionary, tiny_model

from segatron_fairseq.modules.shared_layers import layer_groups


def build(arch, *extra, num_symbols=40):
    return tiny_model(arch, *extra, width=(), vocabulary=dictionary(words=num_symbols - 4))


def tiny(sharing, *extra):
    return build("segabert_tiny", "--encoder-layers", 4, "--share-encoder-layers", sharing, "--dropout", 0,
                 "--attention-dropout", 0, *extra)


def _layer_params(model, layer):
    return {name: p for name, p in model.encoder.sentence_encoder.layers[layer].named_parameters()}


def test_layer_groups_are_albert_assignment():
    assert layer_groups(12, 1) == [0] * 12
    assert layer_groups(12, 3) == [0] * 4 + [1] * 4 + [2] * 4
    assert layer_groups(5, 2) == [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="5 layer groups for 4 layers"):
        layer_groups(4, 5)


ATTENTION = {"self_attn", "self_attn_layer_norm", "in_proj_weight", "in_proj_bias", "out_proj_weight",
             "out_proj_bias"}
FFN = {"fc1", "fc2", "final_layer_norm", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}
# fairseq 0.12.2's copies of a layer's weights for PyTorch's fused inference path (zeros until a checkpoint loads)
FUSED_PATH_COPIES = {"in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "fc1_weight", "fc1_bias",
                     "fc2_weight", "fc2_bias"}


@pytest.mark.parametrize("sharing,shared", [("all", ATTENTION | FFN), ("attention", ATTENTION), ("ffn", FFN),
                                            ("none", set())])
def test_shared_tensors_are_one_object_counted_once(sharing, shared):
    """Each shared tensor is the same Parameter in every layer, parameters() yields it once, the state dict holds
    it once (under layers.0), and the count falls by 3 copies of the shared block."""
    model, plain = tiny(sharing), tiny("none")
    assert {name.split(".")[0] for name in _layer_params(plain, 0)} == ATTENTION | FFN
    layers = model.encoder.sentence_encoder.layers
    for layer in range(1, 4):
        for name, p in _layer_params(model, layer).items():
            same = p is _layer_params(model, 0)[name]
            assert same == (name.split(".")[0] in shared), (layer, name)
    block = sum(p.numel() for name, p in _layer_params(plain, 0).items() if name.split(".")[0] in shared)
    count = sum(p.numel() for p in model.parameters())
    assert count == sum(p.numel() for p in plain.parameters()) - 3 * block
    keys = set(model.state_dict())
    prefix = "encoder.sentence_encoder.layers."
    for name in _layer_params(plain, 0):
        assert prefix + "0." + name in keys
        assert (prefix + "3." + name in keys) == (name.split(".")[0] not in shared)
    stored = {v.data_ptr(): v.numel() for v in model.state_dict().values()}  # the tied LM head's weight once
    assert sum(stored.values()) == count + sum(b.numel() for b in model.buffers())
    if sharing == "all":
        assert all(layer is layers[0] for layer in layers)


def test_gradient_of_a_shared_tensor_sums_every_layer():
    """The shared fc1 weight's gradient is the sum of the gradients each layer's use of it gets (checked against
    the same model unshared, its four fc1 weights set equal)."""
    shared, plain = tiny("ffn"), tiny("none")
    with torch.no_grad():
        for name, p in plain.named_parameters():
            p.copy_(shared.get_parameter(name))
    src = torch.tensor([[0, 5, 6, 7, 8, 2]])
    index = torch.zeros_like(src)
    for model in (shared, plain):
        model.zero_grad()
        logits, _ = model(src, paragraph_index=index, sentence_index=index, token_index=torch.arange(6)[None])
        logits.logsumexp(-1).sum().backward()
    fc1 = [layer.fc1.weight.grad for layer in plain.encoder.sentence_encoder.layers]
    torch.testing.assert_close(shared.encoder.sentence_encoder.layers[0].fc1.weight.grad, sum(fc1))
    assert all(g.abs().sum() > 0 for g in fc1)


def test_layer_groups_share_within_each_group():
    model = tiny("all", "--encoder-layer-groups", 2)
    layers = model.encoder.sentence_encoder.layers
    assert layers[0] is layers[1] and layers[2] is layers[3] and layers[0] is not layers[2]
    assert {k.split(".")[3] for k in model.state_dict() if ".layers." in k} == {"0", "2"}


def test_shared_state_dict_reloads_to_the_same_outputs():
    """A state dict of a shared model (each shared tensor once) loads strictly into a fresh one and gives the same
    logits; the model's own duplicate keys (every layer) load as well."""
    src = torch.tensor([[0, 5, 6, 7, 8, 2]])
    index = torch.zeros_like(src)
    inputs = dict(paragraph_index=index, sentence_index=index, token_index=torch.arange(6)[None])
    for sharing in ("all", "attention"):
        model = tiny(sharing)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        other = tiny(sharing, "--seed", 3)
        torch.manual_seed(5)
        for p in other.parameters():
            torch.nn.init.normal_(p) if p.dim() > 1 else None
        other.load_state_dict(model.state_dict(), strict=True)
        torch.testing.assert_close(other(src, **inputs)[0], model(src, **inputs)[0])


@pytest.mark.parametrize("arch,segment_positions", [("segabert_bert_albert_base", False),
                                                    ("segabert_albert_base", True)])
def test_albert_base_has_albert_parameter_count(arch, segment_positions):
    """With a 30000-symbol dictionary: transformers' AlbertForMaskedLM of the base size (vocab 30000) counts
    11,221,680 parameters (AlbertModel, with the pooler, 11,683,584: the 11.7M of the paper). Ours, without a
    pooler (fine-tuning heads bring their own), differs only in the position rows: fairseq's 2 extra learned
    position rows (514 for 512, 2 x 128) for BERT; SegaBERT has no position table (512 x 128) but the index
    tables (50 + 100 + 256) x 128. fairseq's count (its "num. model params" log) also holds fairseq 0.12.2's
    zero copies of the layer's weights for PyTorch's fused inference path, left out here."""
    model = build(arch, num_symbols=30000)
    args = model.args
    assert (args.encoder_layers, args.encoder_embed_dim, args.factorized_embed_dim, args.encoder_attention_heads,
            args.encoder_ffn_embed_dim, args.activation_fn, args.num_token_types) == (
        12, 768, 128, 12, 3072, "gelu_accurate", 2)
    hf_masked_lm = 11_221_680
    positions = (50 + 100 + 256 - 512) * 128 if segment_positions else 2 * 128
    fused_copies = sum(p.numel() for name, p in model.named_parameters() if name.split(".")[-1] in FUSED_PATH_COPIES)
    assert fused_copies == 4 * 768 * 768 + 4 * 768 + 2 * 768 * 3072 + 3072 + 768  # one layer's, shared as it is
    assert sum(p.numel() for p in model.parameters()) - fused_copies == hf_masked_lm + positions


@pytest.mark.parametrize("size,layers,hidden,heads", [("large", 24, 1024, 16), ("xlarge", 24, 2048, 32),
                                                      ("xxlarge", 12, 4096, 64)])
def test_larger_albert_sizes(size, layers, hidden, heads):
    parser = argparse.Namespace()
    from fairseq.models import ARCH_CONFIG_REGISTRY

    ARCH_CONFIG_REGISTRY[f"segabert_bert_albert_{size}"](parser)
    assert (parser.encoder_layers, parser.encoder_embed_dim, parser.encoder_attention_heads,
            parser.encoder_ffn_embed_dim, parser.factorized_embed_dim, parser.share_encoder_layers) == (
        layers, hidden, heads, 4 * hidden, 128, "all")


@pytest.mark.parametrize("extra,says", [
    (["--factorized-embed-dim", -5], "--factorized-embed-dim -5: must be at least 1"),
    (["--share-encoder-layers", "all", "--encoder-layer-groups", 0], "--encoder-layer-groups 0: must be 1 to the 4"),
    (["--share-encoder-layers", "all", "--encoder-layer-groups", 5], "--encoder-layer-groups 5: must be 1 to the 4"),
    (["--encoder-layer-groups", 2], "--encoder-layer-groups 2 needs --share-encoder-layers"),
])
def test_wrong_factorization_and_sharing_options_are_refused_by_name(extra, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        build("segabert_tiny", "--encoder-layers", 4, *extra)
