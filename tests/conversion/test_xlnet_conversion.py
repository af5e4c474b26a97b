"""segatron-import hf-xlnet and segatron-export hf of XLNet against transformers==4.35.2 (random XLNetLMHeadModels at
base depth and heads, narrowed width, saved with save_pretrained beside an XLNet-style spiece.model): the two-stream
logits to 1e-5 both ways, with and without memory."""
import json

import numpy as np
import pytest
import torch
import transformers
from conftest import _fresh_hydra_version_base, run_cli
from test_albert_conversion import _spiece
from test_huggingface_importers import _load
from tiny_models import as_options, tiny_model

from segatron_fairseq.data.permutation_lm import permutation_sample

assert transformers.__version__ == "4.35.2", transformers.__version__

VOCAB_SIZE = 60
# XLNet's spiece.model: <unk> <s> </s> <cls> <sep> <pad> <mask> <eod> <eop> at ids 0..8
XLNET_PIECES = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1, user_defined_symbols=["<eop>"],
                    control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>"])
LENGTH, REUSE, PREDICTIONS = 16, 8, 6


def _hf_xlnet(directory, lm_head=True, safetensors=True, untie_r=True, **config):
    """A random XLNetLMHeadModel (or bare XLNetModel): 12 layers of 12 heads of 4 (d 48, FFN 64), memory 8 of the
    first 8 positions (reuse_len), every parameter drawn at a visible scale (N(0, 0.15); with ``untie_r`` false one
    bias set copied to every layer, as Hugging Face's TensorFlow loader does), beside an XLNet-style spiece.model."""
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
    """Our ids (2, LENGTH + REUSE): two samples a row, the second starting REUSE later (XLNet's reuse part);
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


def _assert_same_logits(hf_model, ours, their_ids, reuse_len=REUSE):
    """``ours`` (our xlnet) and ``hf_model`` give the same logits at each of our symbols (``their_ids``: our id ->
    theirs): the query stream's at the targets for two samples, the second with each one's memory of the first
    (``reuse_len`` positions of it; Hugging Face's own mems), and the content stream's without targets."""
    ids, token_type, perm_mask, mapping = _two_segments(len(their_ids))
    mems = None
    ours.reset_memory()
    with torch.no_grad():
        for start in (0, REUSE):
            segment = ids[:, start:start + LENGTH]
            theirs = hf_model(their_ids[segment], perm_mask=perm_mask, target_mapping=mapping,
                              token_type_ids=token_type, mems=mems, use_mems=True)
            mems = theirs.mems
            logits, _ = ours(segment, perm_mask, mapping, token_type, reuse_len=reuse_len)
            torch.testing.assert_close(logits, theirs.logits[..., their_ids], rtol=0, atol=1e-5)
        ours.reset_memory()
        logits, _ = ours(ids[:, :LENGTH], segment_ids=token_type)
        theirs = hf_model(their_ids[ids[:, :LENGTH]], token_type_ids=token_type).logits
        torch.testing.assert_close(logits, theirs[..., their_ids], rtol=0, atol=1e-5)


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
    saved = torch.load(tmp_path / "imported" / "checkpoint.pt", weights_only=False)["cfg"]
    assert (saved["task"]["_name"], saved["criterion"]["_name"]) == ("xlnet_plm", "xlnet_plm")  # fairseq-validate's
    assert task.dictionary.symbols[:8] == ["<s>", "<pad>", "</s>", "<unk>", "<cls>", "<sep>", "<mask>", "<eod>"]
    index = _index(tmp_path / "hf")
    assert index[:6].tolist() == [3, 0, 2, 4, 5, 1]  # <unk> <s> </s> <cls> <sep> <pad>
    _assert_same_logits(hf_model, ours, torch.argsort(index))


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
        theirs = hf_model(torch.argsort(index)[ids[:, :LENGTH]], token_type_ids=token_type).last_hidden_state
        _, extra = ours(ids[:, :LENGTH], segment_ids=token_type, features_only=True)
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


# ---- segatron-export hf ------------------------------------------------------------------------------------------

def _write_xlnet_checkpoint(directory, corpus, positions="token", tie_position_biases=False):
    """An xlnet checkpoint (task xlnet_plm) on ``corpus``'s dictionary, 2 layers of 4 heads of 8, memory 8, every
    parameter drawn at a visible scale; written as fairseq-train would (``fairseq_checkpoint.write_checkpoint``)."""
    from fairseq.data import Dictionary

    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint

    dictionary = Dictionary.load(str(corpus / "dict.txt"))
    options = as_options(encoder_layers=2, encoder_embed_dim=32, encoder_attention_heads=4, encoder_head_dim=8,
                         encoder_ffn_embed_dim=48, mem_len=REUSE, positions=positions,
                         tie_position_biases=tie_position_biases, init_std=0.3)
    model = tiny_model("xlnet_tiny", *options, width=(), seed=1, vocabulary=dictionary)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.normal_(1.0, 0.3)
    arguments = ["--arch", "xlnet_tiny", *options]
    with _fresh_hydra_version_base():  # fairseq's hydra.experimental, as a console script of run_cli has it
        return write_checkpoint(str(directory), dictionary, "xlnet_plm", arguments, model.state_dict())


@pytest.fixture(scope="module")
def sentencepiece_corpus(tmp_path_factory):
    """Generated WikiText binarized with a unigram sentencepiece model trained by segatron-preprocess: its pieces
    have no <s> <pad> </s>, and dict.txt (frequency order, madeupword padding) lacks some of its pieces."""
    from conftest import binarized_training_text

    return binarized_training_text(tmp_path_factory.mktemp("xlnet_sentencepiece"), 6, 3, "--bpe", "sentencepiece",
                                   "--bpe-vocab-size", "100")


def _exported_ids(corpus, exported):
    """(our id -> exported id) and the exported directory's symbols, by the dictionary's and config's symbols."""
    from fairseq.data import Dictionary

    from segatron_fairseq.conversion.exporters.huggingface_xlnet import exported_symbols
    from segatron_preprocess.subwords import SentencePiece

    dictionary = Dictionary.load(str(corpus / "dict.txt"))
    symbols, pieces = exported_symbols(dictionary, SentencePiece(str(exported / "spiece.model")))
    assert len(symbols) == json.loads((exported / "config.json").read_text())["vocab_size"]
    position = {symbol: i for i, symbol in enumerate(symbols)}
    return torch.tensor([position[symbol] for symbol in dictionary.symbols]), symbols, pieces, dictionary


@pytest.mark.parametrize("tie_position_biases", [False, True])
def test_export_to_xlnet_lm_head_model(sentencepiece_corpus, tmp_path, tie_position_biases):
    """A --positions token xlnet on a sentencepiece corpus as XLNetLMHeadModel (4.35.2): ids are the spiece.model's
    (then fairseq's symbols it lacks), logits equal ours to 1e-5 at every symbol of ours, with and without memory;
    pieces our dictionary lacks get no probability; XLNetTokenizer on the exported spiece.model gives the exported
    ids of our pieces."""
    from transformers import XLNetLMHeadModel, XLNetTokenizer

    from segatron_preprocess.subwords import SentencePiece

    checkpoint = _write_xlnet_checkpoint(tmp_path / "ckpt", sentencepiece_corpus,
                                         tie_position_biases=tie_position_biases)
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", sentencepiece_corpus, "--out",
            tmp_path / "hf")
    index, symbols, pieces, dictionary = _exported_ids(sentencepiece_corpus, tmp_path / "hf")
    assert symbols[:len(pieces)] == pieces and {"<s>", "<pad>", "</s>"} <= set(symbols[len(pieces):])
    absent = [i for i, piece in enumerate(pieces) if piece not in dictionary.indices]
    assert absent, "the test needs pieces that the dictionary lacks"
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["untie_r"] == (not tie_position_biases) and config["pad_token_id"] == symbols.index("<pad>")
    hf_model = XLNetLMHeadModel.from_pretrained(tmp_path / "hf").eval()
    ours, _ = _load(checkpoint)
    _assert_same_logits(hf_model, ours, index, reuse_len=None)  # the export's reuse_len: null, all of a sample
    with torch.no_grad():
        theirs = hf_model(index[torch.arange(4, 20)][None]).logits
    assert theirs[..., absent].max() < -5000
    tokenizer = XLNetTokenizer.from_pretrained(tmp_path / "hf")
    text = (sentencepiece_corpus.parent / "train.txt").read_text().splitlines()[3].strip()
    our_pieces = SentencePiece(str(sentencepiece_corpus / "sentencepiece.model")).encode(text)
    assert all(piece in dictionary.indices for piece in our_pieces)
    assert tokenizer(text, add_special_tokens=False).input_ids == [symbols.index(piece) for piece in our_pieces]
    assert tokenizer.pad_token_id == symbols.index("<pad>") and tokenizer.cls_token is None


def test_import_binarize_export_round_trip(tmp_path):
    """import -> text binarized with the model's spiece.model and dict.txt (docs/xlnet-huggingface.md's commands) ->
    export gives the original weights exactly; importing that export gives the same dict.txt and state dict."""
    from safetensors.torch import load_file

    hf_model = _hf_xlnet(tmp_path / "hf")
    run_cli("segatron-import", "hf-xlnet", "--model-dir", tmp_path / "hf", "--out", tmp_path / "imported")
    words = [f"w{i}x" for i in range(90)]  # some are no piece of the 60: <unk>
    (tmp_path / "text.txt").write_text("\n".join(" ".join(words[(k * 11 + j) % 90] for j in range(9)) + " ."
                                                 for k in range(40)) + "\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--bpe", "sentencepiece", "--bpe-model",
            tmp_path / "hf" / "spiece.model", "--srcdict", tmp_path / "imported" / "dict.txt", "--trainpref",
            tmp_path / "text.txt", "--destdir", tmp_path / "bin")
    run_cli("segatron-export", "hf", "--checkpoint", tmp_path / "imported" / "checkpoint.pt", "--data",
            tmp_path / "bin", "--out", tmp_path / "exported")
    exported = load_file(tmp_path / "exported" / "model.safetensors")
    original = hf_model.state_dict()
    assert exported.keys() == original.keys()
    for key, value in original.items():
        assert torch.equal(exported[key], value), key
    run_cli("segatron-import", "hf-xlnet", "--model-dir", tmp_path / "exported", "--out", tmp_path / "again")
    assert (tmp_path / "again" / "dict.txt").read_text() == (tmp_path / "imported" / "dict.txt").read_text()
    first, second = (torch.load(tmp_path / name / "checkpoint.pt", weights_only=False)["model"]
                     for name in ("imported", "again"))
    assert first.keys() == second.keys() and all(torch.equal(first[key], second[key]) for key in first)


def test_export_refuses_segatron_positions(sentencepiece_corpus, tmp_path):
    """One line naming the option, no traceback, nothing written (cli_errors.assert_user_error's checks)."""
    checkpoint = _write_xlnet_checkpoint(tmp_path / "ckpt", sentencepiece_corpus, positions="segatron")
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", sentencepiece_corpus, "--out",
                  tmp_path / "hf", expect_ok=False)
    assert "Traceback" not in out
    assert out.strip().splitlines()[-1].startswith("segatron-export: error: --positions segatron: no Hugging Face "
                                                "class has XLNet with Segatron's"), out[-2000:]
    assert not (tmp_path / "hf").exists()


@pytest.mark.end_to_end
def test_the_newest_transformers_loads_the_xlnet_export(sentencepiece_corpus, tmp_path):
    """The export loads in the newest transformers release (a subprocess) with the logits of 4.35.2, memory aside."""
    from transformers import XLNetLMHeadModel
    from transformers_newest import newest_outputs

    checkpoint = _write_xlnet_checkpoint(tmp_path / "ckpt", sentencepiece_corpus)
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", sentencepiece_corpus, "--out",
            tmp_path / "hf")
    index = _exported_ids(sentencepiece_corpus, tmp_path / "hf")[0]
    ids, token_type, perm_mask, mapping = _two_segments(len(index))
    inputs = dict(input_ids=index[ids[:, :LENGTH]], perm_mask=perm_mask, target_mapping=mapping,
                  token_type_ids=token_type)
    with torch.no_grad():
        expected = XLNetLMHeadModel.from_pretrained(tmp_path / "hf").eval()(**inputs).logits
    torch.testing.assert_close(newest_outputs(tmp_path, tmp_path / "hf", "XLNetLMHeadModel", inputs), expected,
                               rtol=0, atol=1e-5)


def test_a_symbol_fine_tuning_appended_gets_no_probability(sentencepiece_corpus):
    """A fine-tuned model's dictionary ends with the <mask> its task appended (never a target): exported after the
    pieces, with the bias of an absent piece; every other symbol keeps its own bias."""
    from fairseq.data import Dictionary

    from segatron_fairseq.conversion.exporters.huggingface_xlnet import ABSENT_PIECE_BIAS, _state, exported_symbols
    from segatron_fairseq.segments import MASK_SYMBOL
    from segatron_preprocess.subwords import SentencePiece

    dictionary = Dictionary.load(str(sentencepiece_corpus / "dict.txt"))
    dictionary.add_symbol(MASK_SYMBOL)
    width = as_options(encoder_layers=1, encoder_embed_dim=16, encoder_attention_heads=2, encoder_head_dim=8,
                       encoder_ffn_embed_dim=24)
    model = tiny_model("xlnet", width=width, vocabulary=dictionary)
    with torch.no_grad():
        model.output_bias.normal_()
    symbols, pieces = exported_symbols(dictionary, SentencePiece(str(sentencepiece_corpus / "sentencepiece.model")))
    bias = _state(model, dictionary, symbols)["lm_loss.bias"]
    assert symbols.index(MASK_SYMBOL) >= len(pieces) and bias[symbols.index(MASK_SYMBOL)] == ABSENT_PIECE_BIAS
    ours = [i for i, symbol in enumerate(symbols) if symbol in dictionary.indices and symbol != MASK_SYMBOL]
    assert torch.equal(bias[ours], model.output_bias.detach()[[dictionary.index(symbols[i]) for i in ours]])
