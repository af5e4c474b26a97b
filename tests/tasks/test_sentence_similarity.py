"""Sentence embeddings and STS: pooling by hand, the STS file formats, segatron-sts against a
sentence-by-sentence reference, and S-SegaBERT's siamese NLI fine-tuning from SNLI / MNLI files."""
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import ROOT, fairseq_train, pretrained_kind, run_cli
from scipy import stats

from segatron_fairseq.cli.sts import read_sts
from segatron_fairseq.evaluation.sentence_embeddings import pool

WORDS = "the crab lives near a reef it hides under ledge fish swim far away".split()


def test_pooling_by_hand():
    features = torch.tensor([[[1.0, 4.0], [3.0, 0.0], [9.0, 9.0]],
                             [[2.0, 2.0], [4.0, 6.0], [0.0, -1.0]]])
    padding = torch.tensor([[False, False, True], [False, False, False]])
    assert np.allclose(pool(features, padding, "mean"), [[2.0, 2.0], [2.0, 7 / 3]])
    assert pool(features, padding, "max").tolist() == [[3.0, 4.0], [4.0, 6.0]]
    assert pool(features, padding, "cls").tolist() == [[1.0, 4.0], [2.0, 2.0]]
    with pytest.raises(ValueError, match="pooling 'sum'"):
        pool(features, padding, "sum")


def test_sts_formats(tmp_path):
    stsb = tmp_path / "dev.tsv"
    stsb.write_text("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                    "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA man plays .\tA man sings .\t2.5\n")
    sick = tmp_path / "SICK.txt"
    sick.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
                    "1\tA dog runs\tA cat runs\t3.6\tNEUTRAL\n")
    plain = tmp_path / "sts12.txt"
    plain.write_text("One .\tTwo .\t1.0\nThree .\tFour .\t4.2\n")
    assert read_sts(str(stsb))[:2] == (["A man plays ."], ["A man sings ."]) and read_sts(str(stsb))[2][0] == 2.5
    assert read_sts(str(sick))[0] == ["A dog runs"] and read_sts(str(sick))[2][0] == 3.6
    assert read_sts(str(plain))[1] == ["Two .", "Four ."] and list(read_sts(str(plain))[2]) == [1.0, 4.2]
    plain.write_text("One .\tTwo .\thigh\n")
    with pytest.raises(ValueError, match=r"sts12.txt: line 1: score 'high' is not a number"):
        read_sts(str(plain))


# batched vs one-sentence similarities differ by <= 1.8e-7 (measured, float32, every kind here); 5x that and more
SIMILARITY_TOLERANCE = 1e-6


def _sts_file(path, rng, n):
    with open(path, "w") as f:
        for _ in range(n):
            a = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
            b = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10)))
            f.write(f"{a} .\t{b} .\t{rng.uniform(0, 5):.2f}\n")


@pytest.mark.parametrize("kind", ["segabert", "albert", "electra"])
def test_zero_shot_sts_matches_a_sentence_by_sentence_reference(segabert_corpus, kind, request, tmp_path):
    """segatron-sts of a pre-trained SegaBERT, ALBERT or ELECTRA (its discriminator) checkpoint: its batched,
    padded embeddings give each pair the similarity a sentence-by-sentence reference gives it, and it prints the
    correlations of its similarities.

    Pair by pair, not by the correlations: ELECTRA's tiny discriminator embeds every sentence alike (similarities
    0.99919 to 0.99976, std 1.7e-4), so float32 noise between a padded batch and a single sentence (<= 1.8e-7 in a
    similarity, ~3 ulps; <= 4.8e-7 in an embedding of norm 8) moves its Pearson x 100 by 0.0102 with one torch
    thread (12.0631 vs 12.0733), more than the table's rounding; pooled padding, attention to padding or rows
    mixed up in a batch move a similarity by 2.8e-4 or more (measured), far above SIMILARITY_TOLERANCE."""
    import random

    from segatron_fairseq.cli.sts import SentenceEncoder, correlations
    from segatron_fairseq.models.segabert import SegaBERTModel

    _sts_file(tmp_path / "sts.txt", random.Random(0), 24)
    _, _, checkpoint = pretrained_kind(request, kind)
    out = run_cli("segatron-sts", "--checkpoint", checkpoint, "--data", segabert_corpus, "--cpu",
                  tmp_path / "sts.txt")
    assert "pooling mean" in out
    printed = re.search(r"^sts.txt\s+24\s+([-0-9.]+)\s+([-0-9.]+)$", out, re.M).groups()
    pairs = read_sts(str(tmp_path / "sts.txt"))
    first, second, gold = pairs
    # reference: one sentence at a time (no padding), mean of every position, cosine in float64
    hub = SegaBERTModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(segabert_corpus))

    def embed(text):
        return hub.extract_features(hub.encode(text))[0].mean(dim=0).double()

    reference = [float(torch.nn.functional.cosine_similarity(embed(a), embed(b), dim=0))
                 for a, b in zip(first, second)]
    # segatron-sts's pieces, in this process: its embeddings (batches of 64, padded), its correlations
    encoder = SentenceEncoder(str(checkpoint), str(segabert_corpus), None, cpu=True)
    similarity = torch.nn.functional.cosine_similarity(encoder.embed(first), encoder.embed(second)).double()
    assert encoder.pooling == "mean"
    assert similarity.tolist() == pytest.approx(reference, abs=SIMILARITY_TOLERANCE)
    assert np.ptp(reference) > 100 * SIMILARITY_TOLERANCE  # the pairs differ by more than the tolerance
    n, rho, r = correlations(encoder, "sts.txt", pairs)
    assert n == 24
    assert rho == pytest.approx(100 * stats.spearmanr(similarity, gold).statistic, abs=1e-6)
    assert r == pytest.approx(100 * stats.pearsonr(similarity, gold).statistic, abs=1e-6)
    assert printed == (f"{rho:.2f}", f"{r:.2f}")


def _nli_files(root, rng):
    snli, mnli = root / "snli_1.0", root / "MNLI"
    snli.mkdir()
    mnli.mkdir()
    labels = ["contradiction", "entailment", "neutral"]
    header = "gold_label\tb1\tb2\tp1\tp2\tsentence1\tsentence2\tcaptionID\tpairID\n"
    mnli_header = "index\tpromptID\tpairID\tgenre\tb1\tb2\tp1\tp2\tsentence1\tsentence2\tlabel1\tgold_label\n"
    for name, n in (("train", 60), ("dev", 12)):
        rows = [(" ".join(rng.choice(WORDS) for _ in range(5)), " ".join(rng.choice(WORDS) for _ in range(4)),
                 rng.choice(labels + ["-"])) for _ in range(n)]
        (snli / f"snli_1.0_{name}.txt").write_text(header + "".join(f"{label}\t(\t(\t(\t(\t{a}\t{b}\tc\tp\n"
                                                                    for a, b, label in rows))
        mnli_name = "train.tsv" if name == "train" else "dev_matched.tsv"
        (mnli / mnli_name).write_text(mnli_header + "".join(f"{k}\t1\t1e\tgov\t(\t(\t(\t(\t{a}\t{b}\t{label}\t{label}\n"
                                                            for k, (a, b, label) in enumerate(rows) if label != "-"))
    return snli, mnli


@pytest.mark.end_to_end
def test_siamese_nli_fine_tuning_then_sts(segabert_corpus, segabert_checkpoint, tmp_path):
    import random

    rng = random.Random(1)
    snli, mnli = _nli_files(tmp_path, rng)
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "prepare_nli.py"), snli, mnli, tmp_path / "nli"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    rows = (tmp_path / "nli" / "train.tsv").read_text().splitlines()
    kept = [int(n.replace(',', '')) for n in re.findall(r": ([0-9,]+) pairs \(", proc.stdout)]
    assert len(rows) == kept[0] + kept[1] and len(kept) == 4  # SNLI's labelled pairs + MNLI's, each split
    assert all(row.split("\t")[2] in ("contradiction", "entailment", "neutral") for row in rows)
    out = fairseq_train(tmp_path / "nli", task="siamese_nli", arch="segabert_tiny",
                        criterion="siamese_nli", save_dir=tmp_path / "ft",
                        extra=["--pretrain-data", segabert_corpus, "--pooling", "max", "--restore-file",
                               segabert_checkpoint, "--reset-optimizer", "--reset-dataloader", "--reset-meters",
                               "--reset-lr-scheduler", "--batch-size", 16, "--max-update", 4, "--no-epoch-checkpoints",
                               "--log-format", "simple"])
    assert re.search(r"valid on 'valid' subset .*accuracy [0-9.]+", out)
    state = torch.load(tmp_path / "ft" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    head = state["model"]["task_heads.siamese_nli_head.out_proj.weight"]
    assert head.shape == (3, 3 * 64)  # (u, v, |u - v|) -> 3 labels
    _sts_file(tmp_path / "sts.txt", rng, 10)
    sts = run_cli("segatron-sts", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt", "--data", segabert_corpus,
                  "--cpu", tmp_path / "sts.txt")
    assert "pooling max" in sts and re.search(r"^average\s+[-0-9.]+\s+[-0-9.]+$", sts, re.M)
