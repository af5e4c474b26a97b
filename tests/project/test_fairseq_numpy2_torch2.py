"""What the fairseq patch fixes for numpy 2 and torch 2 (fairseq 0.12.2 was written for numpy 1 and torch 1.x):
numpy's removed aliases, the unsigned scalar arithmetic of TokenBlockDataset under NEP 50, and the mask type that
torch 2's fused encoder layer requires. fairseq's own tests of these (tests/ at its v0.12.2 tag, not in the sdist)
run with scripts/fairseq_tests.sh."""
import warnings

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary, LanguagePairDataset, TokenBlockDataset, data_utils
from fairseq.models.transformer import TransformerConfig, TransformerEncoderBase
from fairseq.modules.dynamic_crf_layer import DynamicCRF

PAD, EOS = 1, 2


class Items(torch.utils.data.Dataset):
    """Token tensors as a binarized split holds them: ``sizes`` and ``__getitem__``."""

    def __init__(self, items):
        self.items = [torch.tensor(item, dtype=torch.long) for item in items]
        self.sizes = np.array([len(item) for item in items])

    def __getitem__(self, index):
        return self.items[index]

    def __len__(self):
        return len(self.items)


def blocks(items, block_size, break_mode):
    """Every (source, item, past_target) of a TokenBlockDataset with targets, any warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dataset = TokenBlockDataset(Items(items), Items(items).sizes, block_size, pad=PAD, eos=EOS,
                                    break_mode=break_mode, include_targets=True)
        return [[t.tolist() for t in dataset[i]] for i in range(len(dataset))]


@pytest.mark.parametrize("break_mode, block_size, items, one_token_block", [
    # an empty line of a text file is one </s>: a block of one token in --sample-break-mode eos
    ("eos", None, [[5, 6, EOS], [EOS], [7, EOS]], 1),
    # the stream's last block (7 tokens in blocks of 3) holds one token, the first of its item
    ("none", 3, [[5, 6, EOS], [7, 8, EOS], [EOS]], 2),
])
def test_a_block_of_one_token_slices_as_integers_do(break_mode, block_size, items, one_token_block):
    """TokenBlockDataset's indexes are unsigned numpy scalars (uint16 below 65,500 tokens). numpy 1 turned
    ``e - 2`` (e = 1 for a one-token block at offset 0) into the integer -1, so past_target was
    ``[pad, eos] + buffer[0:-1]``; numpy 2 keeps uint16 (NEP 50): 65535, an overflow warning and
    ``[pad, eos] + buffer[0:65535]``, one token more. The patch computes in Python ints."""
    got = blocks(items, block_size, break_mode)
    source, item, past_target = got[one_token_block]
    assert item == [EOS] and source == [EOS]
    assert past_target == [PAD, EOS]  # buffer[0:-1] of the block's one token: nothing
    for source, item, past_target in got:  # every other block: the stream shifted by one and by two
        if len(item) > 1:
            assert len(source) == len(item) == len(past_target)


def test_eos_break_mode_blocks_are_the_lines():
    """np.compat (numpy 1) is gone in numpy 2: the block index of --sample-break-mode eos used np.compat.long."""
    got = blocks([[5, 6, EOS], [EOS], [7, EOS]], None, "eos")
    assert [item for _, item, _ in got] == [[5, 6, EOS], [EOS], [7, EOS]]


def test_language_pair_dataset_with_length_buckets():
    """--num-batch-buckets: np.vectorize(otypes=[np.compat.long]) in numpy 1."""
    src = Items([[5, EOS], [5, 6, 7, EOS], [6, 6, 6, 6, 6, EOS]])
    dictionary = Dictionary()
    dataset = LanguagePairDataset(src, src.sizes, dictionary, src, src.sizes, dictionary, num_buckets=2)
    assert dataset.bucketed_num_tokens.dtype == np.int64
    assert len(np.unique(dataset.bucketed_num_tokens)) <= 2


def test_span_masks_without_overlap():
    """compute_mask_indices(no_overlap=True) (wav2vec's masks): np.fromiter(..., np.int) in numpy 1."""
    mask = data_utils.compute_mask_indices((2, 50), None, 0.2, 3, no_overlap=True, min_space=1)
    assert mask.shape == (2, 50) and mask.any()


def test_dynamic_crf_with_targets():
    """DynamicCRF's normalizer over a beam holding the targets: np.float("inf") in numpy 1."""
    torch.manual_seed(0)
    crf = DynamicCRF(num_embedding=10, low_rank=4, beam_size=3)
    emissions = torch.randn(2, 5, 10)
    targets = torch.randint(0, 10, (2, 5))
    masks = torch.ones(2, 5, dtype=torch.bool)
    assert torch.isfinite(crf(emissions, targets, masks)).all()


def loaded_encoder(heads):
    """A fairseq transformer encoder as a checkpoint loads it: ``load_state_dict`` packs each layer's q, k, v
    projections for torch's fused encoder layer (the "BetterTransformer" path of eval mode)."""
    torch.manual_seed(0)
    dictionary = Dictionary()
    for word in "abcdefgh":
        dictionary.add_symbol(word)
    cfg = TransformerConfig()
    cfg.encoder.embed_dim, cfg.encoder.ffn_embed_dim, cfg.encoder.attention_heads, cfg.encoder.layers = 12, 24, heads, 2
    encoder = TransformerEncoderBase(cfg, dictionary, torch.nn.Embedding(len(dictionary), 12, dictionary.pad()))
    encoder.load_state_dict(encoder.state_dict())
    return encoder.eval(), dictionary


@pytest.mark.parametrize("heads", [2, 3])
@pytest.mark.parametrize("left_pad", [True, False])
def test_a_loaded_encoder_in_eval_mode_gives_the_outputs_of_its_plain_path(heads, left_pad, monkeypatch):
    """torch 2's fused encoder layer requires the mask's type ("Mask Type should be defined"), which fairseq
    0.12.2 did not pass: every translation model loaded from a checkpoint failed on a batch with padding on the
    left (fairseq's default for sources). With right padding the encoder takes torch's nested tensors instead."""
    encoder, dictionary = loaded_encoder(heads)
    rows = [torch.tensor(row) for row in ([4, 5, 6, 7, 8, 9], [4, 5, 6, 7], [9, 8])]
    tokens = data_utils.collate_tokens(rows, dictionary.pad(), left_pad=left_pad)
    lengths = tokens.ne(dictionary.pad()).sum(1)
    mask_types = []
    fused = torch._transformer_encoder_layer_fwd
    monkeypatch.setattr(torch, "_transformer_encoder_layer_fwd",
                        lambda *args: mask_types.append(args[-1]) or fused(*args))
    with torch.no_grad():
        out = encoder(tokens, lengths)["encoder_out"][0]
        assert mask_types == ([1, 1] if left_pad else [None, None])  # the fused path, with its mask type
        for layer in encoder.layers:
            layer.load_to_BT = False  # fairseq's own attention and feed-forward modules
        plain = encoder(tokens, lengths)["encoder_out"][0]
    assert len(mask_types) == 2
    real = tokens.ne(dictionary.pad()).t()  # T x B, as the outputs
    torch.testing.assert_close(out[real], plain[real], atol=1e-5, rtol=1e-5)


def test_a_loaded_encoder_layer_applies_the_attn_mask_with_the_padding_mask():
    """Given both, the fused path passed only the padding mask; now both, merged (torch's mask type 2)."""
    encoder, _ = loaded_encoder(2)
    layer = encoder.layers[0]
    torch.manual_seed(1)
    x = torch.randn(3, 5, 12)  # B x T x C, what the fused path takes
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[1, :2] = True
    attn_mask = torch.zeros(5, 5, dtype=torch.bool)
    attn_mask[:, 3] = True  # no position attends to position 3
    with torch.no_grad():
        fused = layer(x, padding, attn_mask)
        layer.load_to_BT = False
        plain = layer(x.transpose(0, 1), padding, attn_mask).transpose(0, 1)
        without_attn_mask = layer(x.transpose(0, 1), padding).transpose(0, 1)
    real = ~padding
    torch.testing.assert_close(fused[real], plain[real], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(fused[real], without_attn_mask[real], atol=1e-3)
