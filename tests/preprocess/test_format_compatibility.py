"""A directory binarized by segatron-preprocess 0.1.0 (tests/data) still works (0.1.0 and 0.2.0 directories, which
carry no digests, open after one warning: ``test_manifest.py``)."""
import filecmp
import shutil
from pathlib import Path

import numpy as np
from conftest import fairseq_train, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"  # tests/data
OLD = DATA / "binarized-0.1.0"
TEXT = DATA / "corpus-0.1.0"
FILES = [f"{split}{suffix}.{ext}" for split in ("train", "valid") for suffix in ("", ".paragraph", ".sentence",
                                                                                 ".token") for ext in ("bin", "idx")]


def test_old_directory_reads_and_trains(tmp_path, monkeypatch):
    from segatron_fairseq.data import SegmentIndexedDataset
    from segatron_preprocess import manifest

    corpus = SegmentIndexedDataset(str(OLD / "train"))
    assert len(corpus) == 224 and int(corpus.sizes.sum()) == 3068
    # " The government travels ... . This population ... . The species ... . The larva ... . ": paragraph 1
    tokens, paragraph, sentence, token = corpus[3]
    assert paragraph.tolist() == [1] * 40 and sentence.tolist() == [0] * 11 + [1] * 13 + [2] * 8 + [3] * 8
    assert token.tolist() == list(range(11)) + list(range(13)) + list(range(8)) + list(range(8))
    assert len(corpus.document_starts()) == 12 + 1  # the leading blank line, then one per title
    monkeypatch.setattr(manifest, "_warned", set())  # as in a new process
    out = fairseq_train(OLD, task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                        save_dir=tmp_path / "ckpt", extra=["--batch-size", "2", "--tgt-len", "32", "--max-update", "2",
                                                           "--no-save", "--log-format", "simple", "--log-interval", "1",
                                                           "--tensorboard-logdir", tmp_path / "tb"])
    assert "done training" in out
    assert out.count("was written by segatron-preprocess 0.1.0, without digests") == 1  # train, then valid: once
    # tensorboardX is installed: fairseq writes event files and no longer asks for it
    assert "Please install tensorboardX" not in out
    assert list((tmp_path / "tb").rglob("events.out.tfevents.*"))


def test_same_text_gives_the_same_bytes_with_the_old_dictionary_and_punkt(tmp_path):
    """Re-binarize the same text with the old dict.txt and punkt.json (a file, the format before
    punkt_tab directories) named explicitly: every dataset file is byte-identical."""
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", TEXT / "train.txt",
            "--validpref", TEXT / "valid.txt", "--destdir", tmp_path / "new", "--srcdict", OLD / "dict.txt",
            "--sentence-splitter", OLD / "punkt.json")
    for name in FILES + ["dict.txt"]:
        assert filecmp.cmp(OLD / name, tmp_path / "new" / name, shallow=False), name


def test_old_destination_is_reused_for_a_new_split(tmp_path):
    """A new split written into an old directory reuses its dict.txt and punkt.json."""
    dest = tmp_path / "old"
    shutil.copytree(OLD, dest)
    (dest / "valid.bin").unlink()
    out = run_cli("segatron-preprocess", "--input-format", "wikitext", "--validpref", TEXT / "valid.txt",
                  "--destdir", dest, "--sentence-splitter", "punkt-trained")
    assert "reused" in out
    for name in [f for f in FILES if f.startswith("valid")]:
        assert filecmp.cmp(OLD / name, dest / name, shallow=False), name
    assert np.array_equal(np.fromfile(OLD / "train.bin", dtype=np.uint8), np.fromfile(dest / "train.bin",
                                                                                      dtype=np.uint8))


def test_old_checkpoint_loads_and_scores_as_before(monkeypatch):
    """A pre-norm Segatron-XL checkpoint of 0.1.0 (its attention LayerNorm was
    ``layers.N.attention.layer_norm``, now ``layers.N.attention_norm``, renamed by
    ``upgrade_state_dict_named``) gives the per-token losses 0.1.0 computed."""
    from segatron_fairseq.evaluation.token_losses import read_stream, token_losses

    monkeypatch.chdir(DATA.parent.parent)  # the checkpoint names its data relative to the repository
    tokens, sentence_start, paragraph_start = read_stream(str(OLD / "valid"))
    losses = token_losses(str(DATA / "segatron_xl_prenorm-0.1.0.pt"), tokens, sentence_start, paragraph_start, 16)
    expected = np.load(DATA / "segatron_xl_prenorm-0.1.0.valid-losses.npy")
    np.testing.assert_allclose(losses, expected, rtol=0, atol=1e-5)
