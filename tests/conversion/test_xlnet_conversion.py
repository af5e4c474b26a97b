"""segatron-import hf-xlnet and segatron-export hf of XLNet against transformers==4.35.2 (random XLNetLMHeadModels at
base depth and heads, narrowed width, saved with save_pretrained beside an XLNet-style spiece.model): the two-stream
logits to 1e-5 both ways, with and without memory."""
import json

import numpy as np
import pytest
import torch
import transformers
from conftest import run_cli
from test_albert_conversion import _spiece
from test_huggingface_importers import _load

from segatron_fairseq.data.permutation_lm import permutation_sample

assert transformers.__version__ == "4.35.2", transformers.__version__

VOCAB_SIZE = 60
# XLNet's spiece.model: <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> at ids 0..8
XLNET_PIECES = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1, control_symbols=["<cls>", "<sep>", "<pad>", "<mask>",
                                                                                "<eod>"], user_defined_symbols=["<eop>"])
LENGTH, REUSE, PREDICTIONS = 16, 8, 6


def _hf_xlnet(directory, lm_head=True, safetensors=True, untie_r=True, **config):
    """A random XLNetLMHeadModel (or bare XLNetModel): 12 layers of 12 heads of 4 (d 48, FFN 64), memory 8 of the
    first 8 positions (reuse_len), every parameter drawn at a visible scale (N(0, 0.15); with ``untie_r`` false one bias set
    copied to every layer, as Hugging Face's TensorFlow loader does), saved beside an XLNet-style spiece.model."""
    from transformers import XLNetConfig, XLNetLMHeadModel, XLNetModel

    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    settings = dict(vocab_size=VOCAB_SIZE, d_model=48, n_layer=12, n_head=12, d_inner=64, ff_activation="gelu",
                    untie_r=untie_r, attn_type="bi", bi_data=False, clamp_len=-1, mem_len=REUSE, reuse_len=REUSE,
                    dropout=0.0)
    model = (XLNetLMHeadModel if lm_head else XLNetModel)(XLNetConfig(**{**settings, **config})).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.normal_(1.0 if "layer_norm.weight" in name else 0.0, 0.15)
        if not untie_r:
            transformer = model.transformer if lm_head else model
            for layer in transformer.layer[1:]:
                for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
                    getattr(layer.rel_attn, name).copy_(getattr(transformer.layer[0].rel_attn, name))
    model.save_pretrained(directory, safe_serialization=safetensors)
    _spiece(directory, VOCAB_SIZE, **XLNET_PIECES)
    return model


def _two_segments(vocab_size):
    """Their ids (2, LENGTH + REUSE): two samples a row, the second starting REUSE later (XLNet's reuse part);
    token types 1 from position 11; perm_mask (2, LENGTH, LENGTH) and target_mapping (2, P, LENGTH) of
    permutation_sample (the first REUSE positions a part of their own)."""
    ids = torch.randint(0, vocab_size, (2, LENGTH + REUSE), generator=torch.Generator().manual_seed(1))
    token_type = torch.zeros(2, LENGTH, dtype=torch.long)
    token_type[:, 11:] = 1
    perm_mask = torch.zeros(2, LENGTH, LENGTH)
    mapping = torch.zeros(2, PREDICTIONS, LENGTH)
    for b in range(2):
        mask, positions = permutation_sample(LENGTH, REUSE, PREDICTIONS, np.random.default_rng(b))
        perm_mask[b] = torch.from_numpy(mask).float()
        mapping[b, torch.arange(PREDICTIONS), torch.from_numpy(positions)] = 1
    return ids, token_type, perm_mask, mapping


def _assert_same_logits(hf_model, ours, index):
    """``ours`` (our xlnet, ids mapped by ``index``: their id -> ours) and ``hf_model`` (their ids) give the same
    query-stream logits at the targets for two samples, the second with each one's memory of the first's reuse part
    (Hugging Face's own mems), and the same content-stream logits without targets."""
    ids, token_type, perm_mask, mapping = _two_segments(len(index))
    mems = None
    ours.reset_memory()
    with torch.no_grad():
        for start in (0, REUSE):
            segment = ids[:, start:start + LENGTH]
            theirs = hf_model(segment, perm_mask=perm_mask, target_mapping=mapping, token_type_ids=token_type,
                              mems=mems, use_mems=True)
            mems = theirs.mems
            logits, _ = ours(index[segment], perm_mask, mapping, token_type, reuse_len=REUSE)
            torch.testing.assert_close(logits[..., index], theirs.logits, rtol=0, atol=1e-5)
        ours.reset_memory()
        logits, _ = ours(index[ids[:, :LENGTH]], segment_ids=token_type)
        theirs = hf_model(ids[:, :LENGTH], token_type_ids=token_type).logits
        torch.testing.assert_close(logits[..., index], theirs, rtol=0, atol=1e-5)


def _index(directory):
    from segatron_fairseq.conversion.importers.huggingface_xlnet import map_xlnet_vocabulary
    from segatron_fairseq.conversion.importers.sentencepiece_vocabulary import read_sentencepiece_vocab

    return map_xlnet_vocabulary(read_sentencepiece_vocab(str(directory / "spiece.model")), "spiece.model").index


@pytest.mark.parametrize("safetensors,untie_r", [(True, True), (False, False)])
def test_hf_xlnet_reproduces_its_logits(tmp_path, safetensors, untie_r):
    """The imported checkpoint, loaded by fairseq's checkpoint_utils, gives XLNetLMHeadModel's logits to 1e-5
    (model.safetensors or pytorch_model.bin); untie_r false with one bias set is --tie-position-biases; XLNet's
    specials sit at fairseq's ids, <cls> <sep> <mask> ... follow as ordinary symbols in the model's order."""
    hf_model = _hf_xlnet(tmp_path / "hf", safetensors=safetensors, untie_r=untie_r)
    run_cli("segatron-import", "hf-xlnet", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    ours, task = _load(tmp_path / "imported" / "checkpoint.pt")
    cfg = ours.cfg
    assert (cfg.encoder_layers, cfg.encoder_embed_dim, cfg.encoder_attention_heads, cfg.encoder_head_dim,
            cfg.encoder_ffn_embed_dim, cfg.mem_len, cfg.positions) == (12, 48, 12, 4, 64, REUSE, "token")
    assert cfg.tie_position_biases == (not untie_r) and ours.content_bias.size(0) == (1 if not untie_r else 12)
    assert task.dictionary.symbols[:8] == ["<s>", "<pad>", "</s>", "<unk>", "<cls>", "<sep>", "<mask>", "<eod>"]
    index = _index(tmp_path / "hf")
    assert index[:6].tolist() == [3, 0, 2, 4, 5, 1]  # <unk> <s> </s> <cls> <sep> <pad>
    _assert_same_logits(hf_model, ours, index)


def test_a_bare_xlnet_model_imports_with_a_zero_output_bias(tmp_path):
    """An XLNetModel directory (keys without transformer., no lm_loss): the same content states, a zero bias."""
    hf_model = _hf_xlnet(tmp_path / "hf", lm_head=False)
    out = run_cli("segatron-import", "hf-xlnet", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    assert "no lm_loss.bias (an XLNetModel without its LM head): the output bias starts at zero" in out
    ours, _ = _load(tmp_path / "imported" / "checkpoint.pt")
    assert not ours.output_bias.any()
    index = _index(tmp_path / "hf")
    ids, token_type, _, _ = _two_segments(VOCAB_SIZE)
    with torch.no_grad():
        theirs = hf_model(ids[:, :LENGTH], token_type_ids=token_type).last_hidden_state
        _, extra = ours(index[ids[:, :LENGTH]], segment_ids=token_type, features_only=True)
    torch.testing.assert_close(extra["content"], theirs, rtol=0, atol=1e-5)


@pytest.mark.parametrize("key,value,message", [
    ("attn_type", "uni", "config.json: attn_type 'uni' (only bidirectional attention (bi) is built)"),
    ("bi_data", True, "config.json: bi_data True (XLNet's backward-position half of the batch is not built)"),
    ("ff_activation", "relu", "config.json: ff_activation 'relu' (the feed-forward layer's activation is gelu)"),
    ("layer_norm_eps", 1e-5, "config.json: layer_norm_eps 1e-05 (the LayerNorms' epsilon is 1e-12)"),
    ("n_layer", 2, "model.safetensors: 12 layers; "),
    ("model_type", "albert", "model_type is 'albert', not 'xlnet'"),
])
def test_hf_xlnet_refusals_name_the_file(tmp_path, key, value, message):
    _hf_xlnet(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**config, key: value}))
    out = run_cli("segatron-import", "hf-xlnet", "--model-dir", tmp_path / "hf", "--out", tmp_path / "x",
                  expect_ok=False)
    assert message in out
    assert not (tmp_path / "x").exists()
