"""fairseq's sharded data, ``--data s0:s1``, in every pre-training task: epoch k trains on shard (k - 1) mod 2, valid
is always the first shard's; a fine-tuning task's ``--pretrain-data s0:s1`` tokenizes with the first shard; shards
binarized differently are refused when the task is set up, in one line naming both directories and the difference.

The shards are two halves of a corpus binarized with the dictionary and Punkt model of the whole: the first half
(and shard 0's valid text) written with the words a0..a15, the second (and shard 1's valid) with b0..b15, so a
dataset's tokens say which shard it read."""
import shutil

import numpy as np
import pytest
import torch
from conftest import run_cli, write_word_corpus
from omegaconf import OmegaConf

from segatron_fairseq.data import SegmentIndexedDataset
from segatron_fairseq.tasks.shards import shard_index
from segatron_preprocess.split_error import SplitFileError

WORDS = {0: [f"a{i}" for i in range(16)], 1: [f"b{i}" for i in range(16)]}


def _preprocess(text, destdir, *options, valid=None):
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", text, "--destdir", destdir,
            *(("--validpref", valid) if valid else ()), *options)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """``whole`` (the dictionary and Punkt model of both halves), the shards ``s0`` and ``s1`` binarized with
    them, and the texts: ``half{k}.txt``, ``valid{k}.txt``."""
    tmp = tmp_path_factory.mktemp("shards")
    for k in (0, 1):
        write_word_corpus(tmp / f"half{k}.txt", WORDS[k], 8, seed=k)
        write_word_corpus(tmp / f"valid{k}.txt", WORDS[k], 2, seed=10 + k)
    (tmp / "whole.txt").write_text((tmp / "half0.txt").read_text() + "\n" + (tmp / "half1.txt").read_text())
    _preprocess(tmp / "whole.txt", tmp / "whole")
    for k in (0, 1):
        _preprocess(tmp / f"half{k}.txt", tmp / f"s{k}", "--srcdict", tmp / "whole" / "dict.txt",
                    "--sentence-splitter", tmp / "whole" / "punkt_tab", valid=tmp / f"valid{k}.txt")
    return tmp


def _config(name, data, **options):
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    common = {"data": data, "seed": 1, "random_token_prob": 0.0, "batch_size": 2, "batch_size_valid": 2,
              "train_subset": "train"}
    fields = TASK_DATACLASS_REGISTRY[name].__dataclass_fields__
    return OmegaConf.merge(OmegaConf.structured(TASK_DATACLASS_REGISTRY[name]),
                           {key: value for key, value in {**common, **options}.items() if key in fields})


# each pre-training task with options that fit the tiny shards
TASKS = {
    "segatron_lm": {"tgt_len": 16},
    "xlnet_plm": {"tokens_per_sample": 16, "reuse_len": 8, "partial_prediction_k": 4},
    "segabert_mlm": {"tokens_per_sample": 24},
    "cloze_lm": {"tokens_per_sample": 24},
    "cross_thought_mlm": {"num_sequences": 2, "sequence_length": 8},
}


def _task(name, data, **options):
    from fairseq.tasks import TASK_REGISTRY

    return TASK_REGISTRY[name].setup_task(_config(name, data, **{**TASKS[name], **options}))


def _token_words(task, dataset, items=4):
    """The words of the first ``items`` items' input tokens (special symbols and ``<mask>`` left out)."""
    found = set()
    for i in range(min(items, len(dataset))):
        item = dataset[i]
        for key, value in item.items():
            if "src_tokens" in key or key in ("source", "tokens", "input_k"):
                found |= {task.dictionary[t] for t in torch.as_tensor(value).flatten().tolist()}
    return {word for word in found if word[0] in "ab" and word[1:].isdigit()}


@pytest.mark.parametrize("name", list(TASKS))
def test_each_epoch_trains_on_its_shard_and_valid_on_the_first(corpus, name):
    task = _task(name, f"{corpus / 's0'}:{corpus / 's1'}")
    task.load_dataset("valid", epoch=2)
    assert _token_words(task, task.dataset("valid")) <= set(WORDS[0])
    for epoch in (1, 2, 3, 4):
        task.load_dataset("train", epoch=epoch)
        shard = (epoch - 1) % 2
        words = _token_words(task, task.dataset("train"))
        assert words and words <= set(WORDS[shard]), (epoch, words)
    if name == "segatron_lm":  # the whole stream is the shard's split
        split = SegmentIndexedDataset(str(corpus / "s1" / "train"), len(task.dictionary))  # owns the memory map
        assert np.array_equal(task.dataset("train").tokens, split.token_array())


def test_the_shard_of_a_split():
    assert [shard_index(3, "train", epoch, "train") for epoch in range(1, 8)] == [0, 1, 2, 0, 1, 2, 0]
    assert [shard_index(3, "valid", epoch, "train") for epoch in (1, 2, 3)] == [0, 0, 0]
    assert shard_index(1, "train", 5, "train") == 0


def test_a_finetuning_task_reads_the_first_pretraining_shard(corpus, tmp_path):
    from segatron_fairseq.data.text_encoder import text_encoder
    from segatron_fairseq.tasks.text_classification import TextClassificationConfig, TextClassificationTask

    spm = {}
    for k in (0, 1):
        options = (("--bpe", "sentencepiece", "--bpe-vocab-size", 16) if k == 0 else
                   ("--bpe", "sentencepiece", "--bpe-model", spm[0] / "sentencepiece.model",
                    "--srcdict", spm[0] / "dict.txt"))
        spm[k] = tmp_path / f"spm{k}"
        _preprocess(corpus / "whole.txt", spm[k], "--sentence-splitter", corpus / "whole" / "punkt_tab", *options)
    (tmp_path / "train.tsv").write_text("a1 a2\t0\nb3 b4\t1\n")
    cfg = TextClassificationConfig(data=str(tmp_path), pretrain_data=f"{spm[0]}:{spm[1]}", regression_target=False)
    task = TextClassificationTask.setup_task(cfg)
    first = TextClassificationTask.setup_task(TextClassificationConfig(
        data=str(tmp_path), pretrain_data=str(spm[0]), regression_target=False))
    assert task.dictionary.symbols == first.dictionary.symbols
    text = "a1 a2 b3 b14"
    assert task.encode(text) == text_encoder(str(spm[0]), first.dictionary)(text)
    assert len(task.encode(text)) > len(text.split())  # sentencepiece pieces, not words


def _rebinarized(corpus, destdir, *options):
    """Shard 1's text binarized into ``destdir`` with ``options`` instead of the whole corpus's resources."""
    _preprocess(corpus / "half1.txt", destdir, *options, valid=corpus / "valid1.txt")
    return destdir


@pytest.mark.parametrize("difference", ["dictionary", "sentence splitter", "stream style"])
def test_shards_binarized_differently_are_refused_naming_both(corpus, difference, tmp_path):
    whole = corpus / "whole"
    options = {
        "dictionary": ("--sentence-splitter", whole / "punkt_tab"),
        "sentence splitter": ("--srcdict", whole / "dict.txt"),
        "stream style": ("--srcdict", whole / "dict.txt", "--sentence-splitter", whole / "punkt_tab",
                         "--stream-style", "authors"),
    }[difference]
    other = _rebinarized(corpus, tmp_path / "other", *options)
    for name in ("segatron_lm", "segabert_mlm"):
        with pytest.raises(SplitFileError) as refused:
            _task(name, f"{corpus / 's0'}:{other}")
        message = str(refused.value)
        assert "\n" not in message
        assert message.startswith(f"{other}: binarized with another {difference} than {corpus / 's0'} ("), message


def test_a_missing_shard_is_named(corpus, tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'missing'}: no such directory: the data of --task "
                                                "segatron_lm must be a segatron-preprocess directory"):
        _task("segatron_lm", f"{corpus / 's0'}:{tmp_path / 'missing'}")


def test_one_directory_reads_as_before(corpus, tmp_path):
    """A single directory is one shard: every epoch trains on it, and no shard is logged."""
    data = tmp_path / "s0"
    shutil.copytree(corpus / "s0", data)
    task = _task("segatron_lm", str(data))
    assert task.split_directory("train", epoch=3) == str(data)
