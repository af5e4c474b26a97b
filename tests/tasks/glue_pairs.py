"""RTE-style GLUE files of pairs, and segatron-predict glue on them: shared by the fine-tuning tests of the cloze
model and XLNet."""
from conftest import run_cli


def write_glue_pairs(glue, rows):
    """``glue``/train.tsv and dev.tsv of ``rows`` (text a, text b, label), test.tsv of the first 5."""
    glue.mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("index\tsentence1\tsentence2\tlabel\n" +
                                 "".join(f"{k}\t{a}\t{b}\t{label}\n" for k, (a, b, label) in enumerate(rows)))
    (glue / "test.tsv").write_text("index\tsentence1\tsentence2\n" +
                                   "".join(f"{k}\t{a}\t{b}\n" for k, (a, b, _) in enumerate(rows[:5])))


def predict_glue_pairs(finetuned, pretrained, pretrained_task, finetuning_task, corpus, glue, tmp_path):
    """segatron-predict glue with the fine-tuned checkpoint writes RTE.tsv (5 predictions of the labels); with the
    pre-trained one (of ``pretrained_task``) it names the task it needs (``finetuning_task``)."""
    predicted = run_cli("segatron-predict", "glue", "--checkpoint", finetuned, "--pretrain-data", corpus,
                        "--glue-task", "RTE", "--data", glue, "--out", tmp_path / "submission", "--cpu")
    assert "5 predictions -> RTE.tsv" in predicted
    lines = (tmp_path / "submission" / "RTE.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction" and [line.split("\t")[0] for line in lines[1:]] == list("01234")
    assert {line.split("\t")[1] for line in lines[1:]} <= {"entailment", "not_entailment"}
    refused = run_cli("segatron-predict", "glue", "--checkpoint", pretrained, "--pretrain-data", corpus,
                      "--glue-task", "RTE", "--data", glue, "--out", tmp_path / "other", "--cpu", expect_ok=False)
    assert refused.strip().splitlines()[-1] == (
        f"segatron-predict: error: {pretrained}: a pre-trained checkpoint (task {pretrained_task}); segatron-predict "
        f"glue needs one fine-tuned with the task {finetuning_task}") and "Traceback" not in refused
