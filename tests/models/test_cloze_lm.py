"""Task cloze_lm and criterion cloze_lm: blocks across sentences within documents, every token a target, the
loss ablation (cloze, bilm, cloze+bilm), training and held-out cloze perplexity with fairseq's commands."""
import argparse
import re

import numpy as np
import pytest
import torch
from conftest import PLUGIN_DIR, fairseq_train, run_cli
from fairseq.data import Dictionary
from tiny_models import dictionary, tiny_model

from segatron_fairseq.criterions.cloze_lm import ClozeLMCriterion, shifted_targets
from segatron_fairseq.data import ClozeBlockDataset, SegmentIndexedDataset, block_layout
from segatron_preprocess.corpus_format import document_starts


def test_blocks_run_across_sentences_and_paragraphs_but_not_documents(segabert_corpus):
    dictionary = Dictionary.load(str(segabert_corpus / "dict.txt"))
    corpus = SegmentIndexedDataset(str(segabert_corpus / "train"), len(dictionary))
    limits = {"paragraph": 50, "sentence": 100, "token": 24}
    blocks = ClozeBlockDataset(corpus, dictionary.bos(), dictionary.eos(), dictionary.pad(), 24, limits)
    tokens = corpus.token_array()
    keep = tokens != dictionary.eos()
    joined = []
    crossed_sentence = crossed_paragraph = False
    for i in range(len(blocks)):
        item = blocks[i]
        ids = item["tokens"].numpy()
        assert ids[0] == ids[-1] == dictionary.bos() and len(ids) == blocks.sizes[i] <= 24
        assert item["target"][0] == item["target"][-1] == dictionary.pad()
        assert torch.equal(item["target"][1:-1], item["tokens"][1:-1])  # every token a target
        inner = {name: item[name].numpy()[1:-1] for name in ("paragraph", "sentence", "token")}
        starts = document_starts(inner["token"], inner["sentence"], inner["paragraph"])
        assert not starts[1:].any()  # a document starts at most at a block's first token
        crossed_sentence |= bool((inner["token"][1:] == 0).any())
        crossed_paragraph |= bool((np.diff(inner["paragraph"]) > 0).any())
        joined.append(ids[1:-1])
    assert crossed_sentence and crossed_paragraph
    # the blocks, in corpus order, are the split's tokens without </s>
    assert np.array_equal(np.concatenate(joined), tokens[keep])


def test_block_indexes_count_from_the_block_start_and_are_clipped_not_shifted():
    """A block deep in a document starts at paragraph 0, sentence 0, token 0; past a table the indexes are
    clipped (SegaBERT's shift would depend on the block's largest index, so on boundaries to the right)."""
    paragraph = np.array([70, 70, 71, 71] + list(range(72, 140)))
    sentence = np.array([3, 4, 0, 1] + [0] * 68)
    token = np.array([9, 0, 0, 0] + [0] * 68)
    tokens = np.arange(10, 10 + len(paragraph))
    layout = block_layout(tokens, {"paragraph": paragraph, "sentence": sentence, "token": token}, 0,
                          {"paragraph": 50, "sentence": 100, "token": 128})
    assert layout.indexes["paragraph"].tolist() == [0, 0, 0, 1, 1] + list(range(2, 50)) + [49] * 21
    assert layout.indexes["sentence"][:6].tolist() == [0, 0, 1, 0, 1, 0]
    assert layout.indexes["token"][:6].tolist() == [0, 0, 0, 0, 0, 0]
    assert layout.clipped and not layout.shifted


def _tiny_model():
    return tiny_model("cloze_two_tower_tiny", width=(), vocabulary=dictionary(words=26))


def test_shifted_targets_are_the_next_and_previous_tokens():
    target = torch.tensor([[1, 5, 6, 7, 1], [1, 8, 1, 1, 1]])
    forward, backward = shifted_targets(target, 1)
    assert forward.tolist() == [[5, 6, 7, 1, 1], [8, 1, 1, 1, 1]]
    assert backward.tolist() == [[1, 1, 5, 6, 7], [1, 1, 8, 1, 1]]


def test_loss_ablation_terms():
    model = _tiny_model()
    task = argparse.Namespace(target_dictionary=argparse.Namespace(pad=lambda: 1))
    src = torch.tensor([[0, 5, 6, 7, 9, 0], [0, 8, 11, 0, 1, 1]])
    target = src.masked_fill(torch.tensor([[1, 0, 0, 0, 0, 1], [1, 0, 0, 1, 1, 1]]).bool(), 1)
    sample = {"net_input": {"src_tokens": src}, "target": target}
    with torch.no_grad():
        logs = {mode: ClozeLMCriterion(task, mode)(model, sample)[2] for mode in ("cloze", "bilm", "cloze+bilm")}
        features = model(src, bilm=True)
    assert logs["cloze"]["sample_size"] == 6 and set(logs["cloze"]) >= {"cloze_loss"}
    assert "bilm_forward_loss" not in logs["cloze"] and "cloze_loss" not in logs["bilm"]
    bilm = (logs["bilm"]["bilm_forward_loss"] + logs["bilm"]["bilm_backward_loss"]) / 2
    torch.testing.assert_close(logs["bilm"]["loss"], bilm)
    torch.testing.assert_close(logs["cloze+bilm"]["loss"], logs["cloze"]["loss"] + 0.15 * bilm)
    # the forward tower's state at i scores token i + 1
    forward_target, _ = shifted_targets(target, 1)
    expected = -model.log_probs(features["forward"], forward_target)[forward_target.ne(1)].sum()
    torch.testing.assert_close(logs["bilm"]["bilm_forward_loss"], expected)


def test_cloze_lm_refuses_other_criteria_and_models(segabert_corpus, tmp_path):
    out = fairseq_train(segabert_corpus, task="cloze_lm", arch="cloze_two_tower_tiny", criterion="masked_lm",
                        save_dir=tmp_path, extra=["--batch-size", 2, "--max-update", 1], expect_ok=False)
    assert "--task cloze_lm needs --criterion cloze_lm, not masked_lm" in out


@pytest.mark.end_to_end
@pytest.mark.parametrize("mode", ["cloze", "bilm", "cloze+bilm"])
def test_each_loss_trains_and_validates(cloze_trained, tmp_path, mode):
    """Each --cloze-loss trains with fairseq-train; fairseq-validate reports its held-out perplexities."""
    data = cloze_trained / "bin"
    fairseq_train(data, task="cloze_lm", arch="cloze_two_tower_tiny", criterion="cloze_lm", save_dir=tmp_path,
                  lr=2e-3, extra=["--cloze-loss", mode, "--tokens-per-sample", 64, "--batch-size", 8,
                                  "--max-update", 4, "--no-epoch-checkpoints", "--disable-validation"])
    out = run_cli("fairseq-validate", data, "--user-dir", PLUGIN_DIR, "--task", "cloze_lm", "--path",
                  tmp_path / "checkpoint_last.pt", "--cpu", "--batch-size", 8, "--valid-subset", "valid")
    assert ("cloze_ppl" in out) == (mode != "bilm")
    assert ("bilm_forward_ppl" in out and "bilm_backward_ppl" in out) == (mode != "cloze")


@pytest.mark.end_to_end
def test_held_out_cloze_perplexity_falls_with_training(cloze_trained):
    """fairseq-validate of the trained fixture: held-out cloze perplexity well below the first steps'."""
    out = run_cli("fairseq-validate", cloze_trained / "bin", "--user-dir", PLUGIN_DIR, "--task", "cloze_lm",
                  "--path", cloze_trained / "ckpt" / "checkpoint_last.pt", "--cpu", "--batch-size", 8,
                  "--valid-subset", "valid")
    held_out = float(re.search(r"valid on 'valid' subset .*\| cloze_ppl ([\d.]+)", out).group(1))
    first = float(re.search(r"cloze_ppl=([\d.]+)", (cloze_trained / "train.log").read_text()).group(1))
    dictionary = Dictionary.load(str(cloze_trained / "bin" / "dict.txt"))
    assert held_out < first < len(dictionary)


@pytest.mark.end_to_end
def test_segment_positions_train(cloze_trained, tmp_path):
    data = cloze_trained / "bin"
    options = ["--segment-positions", "--token-positions", "sentence", "--tokens-per-sample", 64, "--batch-size", 8]
    fairseq_train(data, task="cloze_lm", arch="cloze_two_tower_tiny", criterion="cloze_lm", save_dir=tmp_path,
                  lr=2e-3, extra=[*options, "--max-update", 3, "--no-epoch-checkpoints", "--disable-validation"])
    state = torch.load(tmp_path / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["model"]["network.segment_embeddings.paragraph.weight"].shape == (50, 64)
    assert state["cfg"]["model"]["token_positions"] == "sentence"


def test_the_model_must_hold_the_task_blocks_and_indexes(segabert_corpus):
    from omegaconf import OmegaConf

    from segatron_fairseq.models.cloze_two_tower import ClozeTwoTowerConfig
    from segatron_fairseq.tasks.cloze_lm import ClozeLMConfig, ClozeLMTask

    task = ClozeLMTask.setup_task(ClozeLMConfig(data=str(segabert_corpus), max_paragraph_index=60, seed=1))
    model_cfg = OmegaConf.structured(ClozeTwoTowerConfig(decoder_layers=1, decoder_embed_dim=16,
                                                         decoder_ffn_embed_dim=16, decoder_attention_heads=2,
                                                         segment_positions=True))
    model_cfg._name = "cloze_two_tower"
    longer = ClozeLMTask.setup_task(ClozeLMConfig(data=str(segabert_corpus), tokens_per_sample=1024, seed=1))
    with pytest.raises(ValueError, match=r"--tokens-per-sample 1024 exceeds the model's longest input 512 "
                                         r"\(--max-target-positions\)"):
        longer.build_model(model_cfg)
    with pytest.raises(ValueError, match="the model's paragraph table has 50 rows but the task allows indexes up to "
                                         r"59 \(--max-paragraph-index\)"):
        task.build_model(model_cfg)


@pytest.mark.end_to_end
def test_char_cnn_with_adaptive_softmax_trains_and_validates(cloze_trained, tmp_path):
    """A word-level corpus: the character CNN input and the adaptive softmax (bands scaled to its 108 types)."""
    data = cloze_trained / "bin"
    fairseq_train(data, task="cloze_lm", arch="cloze_two_tower_tiny", criterion="cloze_lm", save_dir=tmp_path,
                  lr=2e-3, extra=["--input-embedder", "char-cnn", "--adaptive-softmax-cutoff", "40,80",
                                  "--tokens-per-sample", 64, "--batch-size", 8, "--max-update", 3,
                                  "--no-epoch-checkpoints", "--disable-validation"])
    state = torch.load(tmp_path / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert "network.embed_tokens.convolutions.6.weight" in state["model"]
    assert "network.adaptive_softmax.tail.1.2.weight" in state["model"]
    out = run_cli("fairseq-validate", data, "--user-dir", PLUGIN_DIR, "--task", "cloze_lm", "--path",
                  tmp_path / "checkpoint_last.pt", "--cpu", "--batch-size", 8, "--valid-subset", "valid")
    assert re.search(r"cloze_ppl [\d.]+", out)


def test_a_corpus_binarized_as_the_authors_stream_is_refused(segabert_corpus, tmp_path):
    """--stream-style authors keeps no document starts: cloze blocks would run across documents."""
    import json
    import shutil

    from segatron_fairseq.tasks.cloze_lm import ClozeLMConfig, ClozeLMTask

    corpus = tmp_path / "authors"
    shutil.copytree(segabert_corpus, corpus)
    metadata_file = corpus / "segatron_preprocess.json"
    metadata = json.loads(metadata_file.read_text())
    metadata["stream_style"] = "authors"
    metadata_file.write_text(json.dumps(metadata))
    task = ClozeLMTask.setup_task(ClozeLMConfig(data=str(corpus), seed=1))
    with pytest.raises(ValueError, match=r"authors: binarized with --stream-style authors .* binarize with "
                                         r"--stream-style fairseq"):
        task.load_dataset("train")
