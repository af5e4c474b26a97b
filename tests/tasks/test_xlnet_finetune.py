"""Fine-tuning XLNet (token and Segatron positions) from a tiny xlnet_plm checkpoint through the GLUE task and
segatron-predict glue; a checkpoint of other relative positions is refused. SQuAD, RACE and NER from XLNet run in
the tests of those tasks (kind "xlnet")."""
import random
import re

import pytest
from conftest import fairseq_train, pretrained_kind, run_cli

RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]


def _glue_pairs(glue, seed: int = 3):
    """RTE-style pairs of FINETUNING_WORDS: train.tsv, dev.tsv and a test.tsv of 5."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(12)]
    rows = [(" ".join(rng.choices(words, k=5)), " ".join(rng.choices(words, k=4)),
             rng.choice(["entailment", "not_entailment"])) for _ in range(24)]
    glue.mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("index\tsentence1\tsentence2\tlabel\n" +
                                 "".join(f"{k}\t{a}\t{b}\t{label}\n" for k, (a, b, label) in enumerate(rows)))
    (glue / "test.tsv").write_text("index\tsentence1\tsentence2\n" +
                                   "".join(f"{k}\t{a}\t{b}\n" for k, (a, b, _) in enumerate(rows[:5])))


@pytest.mark.parametrize("kind", ["xlnet", "xlnet_token"])
def test_glue_pairs_fine_tune_from_xlnet_and_predict(kind, request, segabert_corpus, tmp_path):
    arch, options, pretrained = pretrained_kind(request, kind)
    glue = tmp_path / "RTE"
    _glue_pairs(glue)
    out = fairseq_train(glue, task="segabert_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics",
                        save_dir=tmp_path / "ft",
                        extra=[*options, "--pretrain-data", segabert_corpus, "--glue-task", "RTE", "--restore-file",
                               pretrained, *RESET, "--batch-size", 8, "--max-update", 2, "--no-epoch-checkpoints",
                               "--log-format", "simple"])
    # <mask>, which fine-tuning appends to the pre-training dictionary, gets its rows from the model's initialisation
    assert "embed_tokens.weight: 1 row(s) appended for the fine-tuning symbols" in out
    assert "output_bias: 1 row(s) appended for the fine-tuning symbols" in out
    assert re.search(r"valid on 'valid' subset .*\| accuracy [0-9.]+", out), out[-2000:]
    predicted = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                        "--pretrain-data", segabert_corpus, "--glue-task", "RTE", "--data", glue,
                        "--out", tmp_path / "submission", "--cpu")
    assert "5 predictions -> RTE.tsv" in predicted
    lines = (tmp_path / "submission" / "RTE.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction" and len(lines) == 6
    assert {line.split("\t")[1] for line in lines[1:]} <= {"entailment", "not_entailment"}
    refused = run_cli("segatron-predict", "glue", "--checkpoint", pretrained, "--pretrain-data", segabert_corpus,
                      "--glue-task", "RTE", "--data", glue, "--out", tmp_path / "other", "--cpu", expect_ok=False)
    assert refused.strip().splitlines()[-1] == (
        f"segatron-predict: error: {pretrained}: a pre-trained checkpoint (task xlnet_plm); segatron-predict glue "
        f"needs one fine-tuned with the task segabert_sentence_prediction")


def test_a_checkpoint_of_other_relative_positions_is_refused(request, segabert_corpus, tmp_path):
    """The weights of a --positions token checkpoint fit a Segatron model (only R's split differs): refused."""
    arch, _, pretrained = pretrained_kind(request, "xlnet_token")
    glue = tmp_path / "RTE"
    _glue_pairs(glue)
    out = fairseq_train(glue, task="segabert_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics",
                        save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--positions", "segatron", "--pretrain-data", segabert_corpus, "--glue-task", "RTE",
                               "--restore-file", pretrained, *RESET, "--batch-size", 8, "--max-update", 1])
    assert ("an XLNet checkpoint trained with relative positions 'token' (--positions, --segment-distance-origin); "
            "this model has 'segatron, query': give the checkpoint's") in out
