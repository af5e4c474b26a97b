"""SegaBERT fine-tuning: layout, GLUE TSV reading, metrics, and a rule that needs paragraph indexes."""
import random
import re

import numpy as np
import pytest
from conftest import fairseq_train, run_cli

from segatron_fairseq.data.glue_tsv import GLUE_TASKS, read_tsv
from segatron_fairseq.evaluation.glue_metrics import f1, matthews, pearson, spearman
from segatron_fairseq.segments import layout_of_paragraphs


def test_pair_layout_follows_the_paper():
    tokens, paragraph, sentence, token = layout_of_paragraphs([[10, 11, 12], [20, 21]], bos=0, eos=2,
                                                              max_positions=512, max_token_index=256)
    assert tokens == [0, 10, 11, 12, 2, 20, 21, 2]
    assert paragraph == [0, 0, 0, 0, 0, 1, 1, 1]
    assert sentence == [0] * 8
    assert token == [0, 0, 1, 2, 2, 0, 1, 1]
    tokens, paragraph, _, token = layout_of_paragraphs([[5] * 10], bos=0, eos=2, max_positions=6, max_token_index=3)
    assert tokens == [0, 5, 5, 5, 5, 2] and paragraph == [0] * 6 and token == [0, 0, 1, 2, 2, 2]


def test_truncation_shortens_the_longest_text():
    tokens, paragraph, _, _ = layout_of_paragraphs([[1] * 10, [3] * 4], bos=0, eos=2, max_positions=11,
                                                   max_token_index=256)
    assert len(tokens) == 11 and paragraph.count(0) == 1 + 4 + 1 and paragraph.count(1) == 4 + 1


def test_metrics_on_hand_computed_cases():
    p, t = np.array([1, 1, 0, 0, 1]), np.array([1, 0, 0, 1, 1])
    # tp=2 fp=1 fn=1 tn=1
    assert f1(p, t) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    assert matthews(p, t) == pytest.approx((2 * 1 - 1 * 1) / np.sqrt(3 * 3 * 2 * 2))
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 5.0, 9.0])
    expected = np.corrcoef(x, y)[0, 1]
    assert pearson(x, y) == pytest.approx(expected)
    assert spearman(x, np.array([10.0, 20.0, 30.0, 1000.0])) == pytest.approx(1.0)
    # ties take average ranks: ranks of [1, 2, 2, 3] are [0, 1.5, 1.5, 3]
    assert spearman(np.array([1.0, 2.0, 2.0, 3.0]), np.array([0.0, 1.5, 1.5, 3.0])) == pytest.approx(1.0)
    # degenerate cases report 0, not NaN: no positive prediction, a constant series
    assert f1(np.zeros(4), np.array([0, 1, 0, 1])) == 0.0 and matthews(np.zeros(4), np.array([0, 1, 0, 1])) == 0.0
    assert pearson(np.ones(4), x) == 0.0 and spearman(x, np.ones(4)) == 0.0


def test_glue_presets_read_their_files(tmp_path):
    (tmp_path / "cola.tsv").write_text("gj04\t1\t\tThe sailors rode the breeze clear of the rocks .\n"
                                       "gj04\t0\t*\tThe more we study verbs , the crazier they get get .\n")
    rows = read_tsv(str(tmp_path / "cola.tsv"), GLUE_TASKS["CoLA"])
    assert rows[0] == (["The sailors rode the breeze clear of the rocks ."], "1") and rows[1][1] == "0"
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    (tmp_path / "stsb.tsv").write_text(header + "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\t"
                                       "A plane is taking off .\tAn air plane is taking off .\t5.000\n")
    assert read_tsv(str(tmp_path / "stsb.tsv"), GLUE_TASKS["STS-B"]) == [
        (["A plane is taking off .", "An air plane is taking off ."], "5.000")]
    (tmp_path / "bad.tsv").write_text("sentence\tlabel\nonly one column\n")
    with pytest.raises(ValueError, match=r"bad\.tsv: line 2 has 1 columns"):
        read_tsv(str(tmp_path / "bad.tsv"), GLUE_TASKS["SST-2"])


WORDS = [f"w{i}" for i in range(12)]
RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]


def _pair(rng):
    a = [rng.choice(WORDS) for _ in range(rng.randint(3, 6))]
    b = [rng.choice(WORDS) for _ in range(rng.randint(3, 6))]
    label = rng.randint(0, 1)
    target = b if label else a
    target.insert(rng.randint(0, len(target)), "key")
    return " ".join(a), " ".join(b), str(label)


def _write_task(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("sentence1\tsentence2\tlabel\n")
        for _ in range(n):
            f.write("\t".join(_pair(rng)) + "\n")


def _finetune(segabert_corpus, segabert_checkpoint, glue, save, arch):
    return fairseq_train(
        glue, task="indexed_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics", save_dir=save,
        lr=2e-3, extra=["--pretrain-data", segabert_corpus, "--text-columns", "0,1", "--label-column", 2, "--header",
                        "--metrics", "accuracy,f1,mcc", "--restore-file", segabert_checkpoint, *RESET, "--batch-size",
                        16, "--max-epoch", 12, "--no-epoch-checkpoints", "--no-save", "--log-format", "simple",
                        "--seed", 1, "--dropout", 0, "--attention-dropout", 0, "--best-checkpoint-metric", "accuracy",
                        "--maximize-best-checkpoint-metric"])


@pytest.mark.end_to_end
def test_finetuning_learns_a_rule_on_paragraph_membership(segabert_corpus, segabert_checkpoint, tmp_path):
    glue = tmp_path / "glue"
    glue.mkdir()
    _write_task(glue / "train.tsv", 400, seed=1)
    _write_task(glue / "dev.tsv", 100, seed=2)
    out = _finetune(segabert_corpus, segabert_checkpoint, glue, tmp_path / "ft", "segabert_tiny")
    assert "Loaded checkpoint" in out and "labels ['0', '1']" in out
    last = re.findall(r"valid on 'valid' subset .*?accuracy ([0-9.]+).*?f1 ([0-9.]+) \| mcc ([0-9.-]+)", out)
    accuracy, f1, mcc = map(float, last[-1])
    assert accuracy >= 90.0 and f1 >= 85.0 and mcc >= 0.7 * 100, last[-1]


def test_unknown_label_names_the_file_and_example(segabert_corpus, segabert_checkpoint, tmp_path):
    glue = tmp_path / "glue"
    glue.mkdir()
    _write_task(glue / "train.tsv", 20, seed=1)
    (glue / "dev.tsv").write_text("sentence1\tsentence2\tlabel\nw1 w2\tw3\tmaybe\n")
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch="segabert_tiny",
                        criterion="sentence_prediction_metrics", save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--pretrain-data", segabert_corpus, "--text-columns", "0,1", "--label-column", 2,
                               "--header", "--batch-size", 4, "--max-update", 1])
    assert "dev.tsv: example 1: label 'maybe' is not one of ['0', '1']" in out


def test_glue_test_files_and_submission(segabert_corpus, segabert_checkpoint, tmp_path):
    """segatron-predict glue: the GLUE server's SST-2.tsv from test.tsv (index, sentence), labels as in train."""
    glue = tmp_path / "SST-2"
    glue.mkdir()
    rng = random.Random(3)
    rows = [(" ".join(rng.choice(WORDS) for _ in range(5)), str(rng.randint(0, 1))) for _ in range(40)]
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows))
    (glue / "test.tsv").write_text("index\tsentence\n" + "".join(f"{k}\t{t}\n" for k, (t, _) in enumerate(rows[:7])))
    fairseq_train(glue, task="indexed_sentence_prediction", arch="segabert_tiny",
                  criterion="sentence_prediction_metrics", save_dir=tmp_path / "ft",
                  extra=["--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--restore-file",
                         segabert_checkpoint, *RESET, "--batch-size", 8, "--max-update", 2, "--no-epoch-checkpoints"])
    out = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                  "--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--data", glue,
                  "--out", tmp_path / "submission", "--cpu")
    assert "7 predictions -> SST-2.tsv" in out
    lines = (tmp_path / "submission" / "SST-2.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction" and len(lines) == 8
    assert [line.split("\t")[0] for line in lines[1:]] == [str(k) for k in range(7)]
    assert {line.split("\t")[1] for line in lines[1:]} <= {"0", "1"}
    wrong = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                    "--pretrain-data", segabert_corpus, "--glue-task", "CoLA", "--data", glue,
                    "--out", tmp_path / "other", "--cpu", expect_ok=False)
    assert "fine-tuned on --glue-task SST-2, not CoLA" in wrong


def test_glue_test_file_columns(tmp_path):
    from segatron_fairseq.data.glue_tsv import GLUE_TEST_FILES, read_test_tsv

    path = tmp_path / "test_matched.tsv"
    header = "index\tpromptID\tpairID\tgenre\tb1\tb2\tp1\tp2\tsentence1\tsentence2\n"
    path.write_text(header + "0\t31\t31e\tgov\t(\t(\t(\t(\tA premise .\tA hypothesis .\n")
    (matched, mismatched) = GLUE_TEST_FILES["MNLI"]
    assert (matched.submission, mismatched.submission) == ("MNLI-m.tsv", "MNLI-mm.tsv")
    assert read_test_tsv(str(path), matched.text_columns) == [("0", ["A premise .", "A hypothesis ."])]
    qqp = tmp_path / "qqp.tsv"
    qqp.write_text("id\tquestion1\tquestion2\n5\tWhy ?\tHow ?\n")
    assert read_test_tsv(str(qqp), GLUE_TEST_FILES["QQP"][0].text_columns) == [("5", ["Why ?", "How ?"])]
