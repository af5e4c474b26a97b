"""segatron_lm task + Segatron-XL: stream batching, counters, memory, train/eval-lm/resume/distributed."""
import re

import numpy as np
import pytest
import torch
from conftest import PLUGIN_DIR, binarized_wikitext, fairseq_train, free_port, run_cli
from tiny_models import as_options, build, tiny_args

from segatron_fairseq.data import SegmentIndexedDataset, SegmentStreamDataset

TRAIN = ["--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", 1, "--seed", 3]


def _train(data, arch, save_dir, *extra, command=("fairseq-train",), separate_process=False):
    return fairseq_train(data / "bin", task="segatron_lm", arch=arch, criterion="segatron_lm_loss", save_dir=save_dir,
                         lr=2e-3, extra=[*TRAIN, *extra], command=command, separate_process=separate_process)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return binarized_wikitext(tmp_path_factory.mktemp("segatron_lm"), 40, 6, seed=11)


def _dictionary(data):
    from fairseq.data import Dictionary

    return Dictionary.load(str(data / "bin" / "dict.txt"))


@pytest.mark.parametrize("batch_size,tgt_len,shards", [(3, 7, 1), (2, 16, 2)])
def test_stream_rows_cover_every_token_once_in_order(data, batch_size, tgt_len, shards):
    corpus = SegmentIndexedDataset(str(data / "bin" / "valid"))
    d = _dictionary(data)
    tokens = np.concatenate([corpus[i].tokens.numpy() for i in range(len(corpus))])
    token_index = np.concatenate([corpus[i].token.numpy() for i in range(len(corpus))])
    sentence_index = np.concatenate([corpus[i].sentence.numpy() for i in range(len(corpus))])
    targets, sources, sentence_flags, paragraph_flags = [], [], [], []
    for shard in range(shards):
        stream = SegmentStreamDataset(corpus, d.eos(), d.pad(), batch_size, tgt_len, shards, shard)
        batches = [stream.collater([stream[k]]) for k in range(len(stream))]
        for row in range(batch_size):
            def row_of(key, row=row, batches=batches):
                return torch.cat([b[key][row] if key == "target" else b["net_input"][key][row] for b in batches])
            keep = row_of("target") != d.pad()
            targets.append(row_of("target")[keep])
            sources.append(row_of("src_tokens")[keep])
            sentence_flags.append(row_of("sentence_starts")[keep])
            paragraph_flags.append(row_of("paragraph_starts")[keep])
    assert torch.cat(targets).tolist() == tokens.tolist()  # every token a target once, in order
    stream_tokens = np.concatenate([[d.eos()], tokens[:-1]])
    assert torch.cat(sources).tolist() == stream_tokens.tolist()
    starts = np.concatenate([[True], token_index[:-1] == 0])
    assert torch.cat(sentence_flags).tolist() == starts.tolist()
    para = np.concatenate([[True], (token_index[:-1] == 0) & (sentence_index[:-1] == 0)])
    assert torch.cat(paragraph_flags).tolist() == para.tolist()
    assert sum(b["ntokens"] for b in [stream.collater([stream[k]]) for k in range(len(stream))]) > 0


def test_counters_continue_across_batches_and_restart_each_epoch(data):
    from segatron_fairseq.tasks.segatron_lm import SegatronLMConfig, SegatronLMTask

    task = SegatronLMTask.setup_task(SegatronLMConfig(data=str(data / "bin"), tgt_len=9, batch_size=2,
                                                      batch_size_valid=2, train_subset="train", seed=1))
    task.load_dataset("valid")
    width = as_options(decoder_layers=1, decoder_embed_dim=24, decoder_attention_heads=2, decoder_head_dim=6,
                       decoder_ffn_embed_dim=16)
    model = build(tiny_args("segatron_xl", *as_options(mem_len=9), width=width), task)
    dataset = task.dataset("valid")
    iterator = task.get_batch_iterator(dataset).next_epoch_itr(shuffle=False)
    seen = {"sentence": [], "paragraph": []}
    task.begin_valid_epoch(1, model)
    with torch.no_grad():
        for k, sample in enumerate(iterator):
            if k == 5:
                break
            model(**sample["net_input"])
            memory = model.decoder._memory.get(False)
            for part in seen:
                seen[part].append(memory.last[part].clone())
    # counters = number of starts seen so far in each row
    for part, key in (("sentence", "sentence_starts"), ("paragraph", "paragraph_starts")):
        expected = torch.zeros(2, dtype=torch.long)
        for k in range(5):
            expected = expected + dataset[k][key].sum(dim=1)
            assert torch.equal(seen[part][k], expected), (part, k)
    # memory holds the counters of the last mem_len tokens
    assert model.decoder._memory.get(False).counters["sentence"].shape == (2, 9)
    task.begin_valid_epoch(2, model)
    assert model.decoder._memory.get(False) is None


def _eval_lm_loss(out):
    match = re.search(r"Evaluated ([\d,]+) tokens.*\n.*Loss \(base 2\): ([0-9.]+), Perplexity: ([0-9.]+)", out)
    return int(match.group(1).replace(",", "")), float(match.group(2)), float(match.group(3))


def sequential_loss(checkpoint, corpus_prefix, tgt_len):
    """Independent evaluation (segatron_fairseq.evaluation.token_losses): one row, the split read item by item,
    fed in order -> (tokens, mean loss in bits)."""
    from segatron_fairseq.evaluation.token_losses import read_stream, token_losses

    losses = token_losses(str(checkpoint), *read_stream(str(corpus_prefix)), tgt_len)
    return len(losses), losses.mean() / np.log(2)


@pytest.mark.end_to_end
@pytest.mark.parametrize("arch,extra", [
    ("segatron_xl_tiny", []),
    ("transformer_xl_tiny", ["--adaptive-softmax-cutoff", "40,80", "--adaptive-input",
                             "--tie-adaptive-weights", "--tie-adaptive-proj"]),
])
def test_train_eval_lm_and_resume(data, tmp_path, arch, extra):
    save = tmp_path / "ckpt"
    args = [*extra, "--batch-size", 4, "--tgt-len", 12]
    _train(data, arch, save, *args, "--max-update", 25)
    out = run_cli("fairseq-eval-lm", data / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
                  "--path", save / "checkpoint_last.pt", "--gen-subset", "valid", "--batch-size", 1,
                  "--tgt-len", 10, "--cpu", "--output-word-probs")
    count, loss, ppl = _eval_lm_loss(out)
    valid = SegmentIndexedDataset(str(data / "bin" / "valid"))
    assert count == int(valid.sizes.sum())
    expected_count, expected_loss = sequential_loss(save / "checkpoint_last.pt", data / "bin" / "valid", 10)
    assert count == expected_count
    assert loss == pytest.approx(expected_loss, abs=1e-4)

    # without memory at evaluation the tokens after the first segment score differently (the memory is used)
    without_memory = run_cli("fairseq-eval-lm", data / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
                             "--path", save / "checkpoint_last.pt", "--gen-subset", "valid", "--batch-size", 1,
                             "--tgt-len", 10, "--model-overrides", "{'mem_len': 0}", "--cpu", "--output-word-probs")
    word_probs = [re.findall(r"\[(-?\d+\.\d{6})\]", text) for text in (out, without_memory)]
    assert len(word_probs[0]) == len(word_probs[1]) == count
    assert word_probs[0][:10] == word_probs[1][:10] and word_probs[0][10:] != word_probs[1][10:]

    # resume continues the same stream from the saved batch
    out = _train(data, arch, save, *args, "--max-update", 30)
    assert re.search(r"Loaded checkpoint \S+checkpoint_last\.pt \(epoch 1 @ 25 updates\)", out)
    assert re.search(r"epoch 001:\s+26 / \d+ .*num_updates=26", out), out[-2000:]


LAUNCHERS = {
    "fairseq": lambda: ["fairseq-train", "--distributed-world-size", 2],
    "torchrun": lambda: ["torchrun", "--nproc_per_node", 2, "--master_addr", "127.0.0.1", "--master_port",
                         free_port(), "-m", "fairseq_cli.train"],
}


@pytest.mark.end_to_end
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_distributed_two_processes_on_cpu(data, tmp_path, launcher):
    out = _train(data, "segatron_xl_tiny", tmp_path / "ckpt", "--batch-size", 2, "--tgt-len", 12, "--max-update", 6,
                 "--ddp-backend", "legacy_ddp", command=LAUNCHERS[launcher](), separate_process=True)
    assert "initialized host" in out and "as rank 1" in out
    # each rank reads its own rows: 2 ranks x 2 rows
    assert re.search(r"train: [\d,]+ tokens, 2 rows x [\d,]+ per shard", out)
    assert re.search(r"bsz[ =]4\b.*num_updates[ =]6\b", out)
    assert (tmp_path / "ckpt" / "checkpoint_last.pt").exists()
