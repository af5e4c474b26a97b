"""segatron-import authors-cross-thought on a checkpoint with the key names and shapes of the authors' released
one (their fairseq 0.10 RoBERTa with crossthought_layers), built here; the oracle is their pre-training forward
written out step by step from their encoder's code."""
import argparse

import torch
import torch.nn.functional as F
from conftest import run_cli

DIM, HEADS, FFN, LAYERS, N = 16, 2, 32, 2, 5
WORDS = [f"w{i}" for i in range(20)]


def _layer(g, prefix):
    """A post-norm encoder layer's tensors under ``prefix`` (fairseq's names)."""
    state = {}
    for name, shape in (("self_attn.q_proj", (DIM, DIM)), ("self_attn.k_proj", (DIM, DIM)),
                        ("self_attn.v_proj", (DIM, DIM)), ("self_attn.out_proj", (DIM, DIM)),
                        ("fc1", (FFN, DIM)), ("fc2", (DIM, FFN))):
        state[f"{prefix}{name}.weight"] = torch.randn(*shape, generator=g) * 0.3
        state[f"{prefix}{name}.bias"] = torch.randn(shape[0], generator=g) * 0.1
    for name in ("self_attn_layer_norm", "final_layer_norm"):
        state[f"{prefix}{name}.weight"] = 1 + torch.randn(DIM, generator=g) * 0.1
        state[f"{prefix}{name}.bias"] = torch.randn(DIM, generator=g) * 0.1
    return state


def _their_checkpoint(vocab_size):
    g = torch.Generator().manual_seed(0)
    e = "decoder.sentence_encoder."  # fairseq 0.10 wrote the encoder as "decoder"
    state = {e + "embed_tokens.weight": torch.randn(vocab_size, DIM, generator=g) * 0.3,
             e + "embed_positions.weight": torch.randn(514, DIM, generator=g),
             e + "emb_layer_norm.weight": 1 + torch.randn(DIM, generator=g) * 0.1,
             e + "emb_layer_norm.bias": torch.randn(DIM, generator=g) * 0.1,
             "decoder.lm_head.dense.weight": torch.randn(DIM, DIM, generator=g) * 0.3,
             "decoder.lm_head.dense.bias": torch.randn(DIM, generator=g) * 0.1,
             "decoder.lm_head.layer_norm.weight": 1 + torch.randn(DIM, generator=g) * 0.1,
             "decoder.lm_head.layer_norm.bias": torch.randn(DIM, generator=g) * 0.1,
             "decoder.lm_head.bias": torch.randn(vocab_size, generator=g) * 0.1}
    state["decoder.lm_head.weight"] = state[e + "embed_tokens.weight"]
    for layer in range(LAYERS):
        state.update(_layer(g, f"{e}layers.{layer}."))
    for layer in range(2):
        state.update(_layer(g, f"{e}crossthought_layers.{layer}."))
    args = argparse.Namespace(arch="roberta_base", encoder_layers=LAYERS, encoder_embed_dim=DIM,
                              encoder_ffn_embed_dim=FFN, encoder_attention_heads=HEADS, activation_fn="gelu",
                              dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, pooler_dropout=0.0)
    return {"args": args, "model": state, "extra_state": {}, "optimizer_history": []}


def _their_layer(state, prefix, x, padding=None):
    """x (S, T, d): S independent sequences of T positions; padding (S, T) True at keys to ignore."""
    def linear(name, h):
        return h @ state[f"{prefix}{name}.weight"].t() + state[f"{prefix}{name}.bias"]

    def norm(name, h):
        return F.layer_norm(h, (DIM,), state[f"{prefix}{name}.weight"], state[f"{prefix}{name}.bias"], 1e-5)

    head_dim = DIM // HEADS
    heads = []
    for h in range(HEADS):  # one head at a time
        cols = slice(h * head_dim, (h + 1) * head_dim)
        q = linear("self_attn.q_proj", x)[..., cols] * head_dim ** -0.5
        k, v = linear("self_attn.k_proj", x)[..., cols], linear("self_attn.v_proj", x)[..., cols]
        scores = q @ k.transpose(1, 2)
        if padding is not None:
            scores = scores.masked_fill(padding[:, None, :], float("-inf"))
        heads.append(scores.softmax(-1) @ v)
    x = norm("self_attn_layer_norm", x + linear("self_attn.out_proj", torch.cat(heads, -1)))
    return norm("final_layer_norm", x + linear("fc2", F.gelu(linear("fc1", x))))


def _their_pretraining_logits(state, tokens, pad):
    """Their encoder's forward with CTPRETRAIN=True on one sample, tokens (M, L), and the word offset their
    random.randint drew equal to 1: (M, L, V) logits."""
    e = "decoder.sentence_encoder."
    ids = F.pad(tokens, (N, 0))  # N special tokens, id 0 (<s>), in front of each short sequence
    padding = ids.eq(pad)
    counted = ids.ne(pad).long()
    counted[:, 0], counted[:, N] = 0, 1
    x = state[e + "embed_tokens.weight"][ids] + state[e + "embed_positions.weight"][counted.cumsum(1)]
    x = F.layer_norm(x, (DIM,), state[e + "emb_layer_norm.weight"], state[e + "emb_layer_norm.bias"], 1e-5)
    x = x * (~padding)[..., None]
    for layer in range(LAYERS):
        x = _their_layer(state, f"{e}layers.{layer}.", x, padding)
    specials = _their_layer(state, f"{e}crossthought_layers.0.", x[:, :N].transpose(0, 1))  # across sequences
    x = torch.cat([specials.transpose(0, 1), x[:, N:]], dim=1)
    words = _their_layer(state, f"{e}crossthought_layers.1.", x, padding)[:, N:]
    h = F.gelu(words @ state["decoder.lm_head.dense.weight"].t() + state["decoder.lm_head.dense.bias"])
    h = F.layer_norm(h, (DIM,), state["decoder.lm_head.layer_norm.weight"], state["decoder.lm_head.layer_norm.bias"],
                     1e-5)
    return h @ state["decoder.lm_head.weight"].t() + state["decoder.lm_head.bias"]


def test_authors_cross_thought_reproduces_their_pretraining_forward(tmp_path):
    from fairseq import checkpoint_utils

    (tmp_path / "dict.txt").write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(WORDS)))
    vocab_size = 4 + len(WORDS) + 1  # fairseq's specials, the words, <mask>
    checkpoint = _their_checkpoint(vocab_size)
    torch.save(checkpoint, tmp_path / "cross-thought.pt")
    run_cli("segatron-import", "authors-cross-thought", "--checkpoint", tmp_path / "cross-thought.pt", "--dict",
            tmp_path / "dict.txt", "--out", tmp_path / "imported")
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "imported" / "checkpoint.pt")])
    model = models[0].eval()
    assert len(task.dictionary) == vocab_size and model.args.shared_special_embedding and model.args.share_cross_layers
    tokens = torch.randint(4, 4 + len(WORDS), (6, 7), generator=torch.Generator().manual_seed(1))
    tokens[2, 5:] = task.dictionary.pad()  # a short sequence ending in padding
    expected = _their_pretraining_logits(checkpoint["model"], tokens, task.dictionary.pad())
    with torch.no_grad():
        ours, _ = model(tokens[None])
    real = tokens.ne(task.dictionary.pad())
    torch.testing.assert_close(ours[0][real], expected[real], rtol=0, atol=1e-5)


def test_cross_thought_import_errors_name_the_file(tmp_path):
    (tmp_path / "dict.txt").write_text("".join(f"{w} 1\n" for w in WORDS[:-1]))
    checkpoint = _their_checkpoint(4 + len(WORDS) + 1)
    torch.save(checkpoint, tmp_path / "ct.pt")
    out = run_cli("segatron-import", "authors-cross-thought", "--checkpoint", tmp_path / "ct.pt", "--dict",
                  tmp_path / "dict.txt", "--out", tmp_path / "x", expect_ok=False)
    assert "ct.pt: 25 word embeddings, but the dictionary with <mask> has 24 symbols" in out
    del checkpoint["model"]["decoder.sentence_encoder.crossthought_layers.1.fc1.weight"]
    torch.save(checkpoint, tmp_path / "ct.pt")
    out = run_cli("segatron-import", "authors-cross-thought", "--checkpoint", tmp_path / "ct.pt", "--dict",
                  tmp_path / "dict.txt", "--out", tmp_path / "x", expect_ok=False)
    assert "not a Cross-Thought checkpoint" in out and not (tmp_path / "x" / "checkpoint.pt").exists()
