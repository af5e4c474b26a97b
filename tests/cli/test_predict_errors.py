"""segatron-predict: each user mistake is one line naming the file or option, a non-zero exit, no traceback and
nothing written."""
import random

import pytest
from cli_errors import assert_user_error, listing, write_bad_checkpoints
from conftest import fairseq_train, run_cli

RESET = ("--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler")


@pytest.fixture(scope="module")
def files(segabert_corpus, segabert_checkpoint, segatron_xl_trained, tmp_path_factory):
    """An SST-2 directory and a SegaBERT fine-tuned on it (1 update), bad checkpoints, a pre-trained SegaBERT, a
    Segatron-XL and its corpus, a SQuAD file."""
    tmp = tmp_path_factory.mktemp("predict_errors")
    glue = tmp / "SST-2"
    glue.mkdir()
    rng = random.Random(5)
    rows = [(" ".join(rng.choice(["w1", "w2", "w3", "key"]) for _ in range(5)), str(k % 2)) for k in range(16)]
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows))
    (glue / "test.tsv").write_text("index\tsentence\n" + "".join(f"{k}\t{t}\n" for k, (t, _) in enumerate(rows[:4])))
    fairseq_train(glue, task="indexed_sentence_prediction", arch="segabert_tiny",
                  criterion="sentence_prediction_metrics", save_dir=tmp / "ft",
                  extra=["--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--restore-file",
                         segabert_checkpoint, *RESET, "--batch-size", 8, "--max-update", 1, "--no-epoch-checkpoints",
                         "--disable-validation"])
    (tmp / "dev-v1.1.json").write_text('{"version": "1.1", "data": []}')
    finetuned = tmp / "ft" / "checkpoint_last.pt"
    return {"finetuned": finetuned, "corpus": segabert_corpus, "glue": glue, "pretrained": segabert_checkpoint,
            "segatron_xl": segatron_xl_trained / "ckpt" / "checkpoint_last.pt",
            "xl_corpus": segatron_xl_trained / "bin",
            "squad": tmp / "dev-v1.1.json", "missing": tmp / "missing.pt", **write_bad_checkpoints(tmp, finetuned)}


GLUE = {  # name: (options replaced, what the error names)
    "missing checkpoint": ({"--checkpoint": "{missing}"}, "{missing}"),
    "empty checkpoint": ({"--checkpoint": "{empty}"}, "{empty}"),
    "truncated checkpoint": ({"--checkpoint": "{truncated}"}, "{truncated}"),
    "pre-trained checkpoint": ({"--checkpoint": "{pretrained}"}, "{pretrained}: a pre-trained checkpoint"),
    "Segatron-XL checkpoint": ({"--checkpoint": "{segatron_xl}"}, "{segatron_xl}"),
    "dictionary does not fit": ({"--pretrain-data": "{xl_corpus}"}, "--pretrain-data"),
    "pretrain-data missing": ({"--pretrain-data": "{missing}"}, "{missing}"),
    "batch-size 0": ({"--batch-size": "0"}, "--batch-size"),
    "batch-size negative": ({"--batch-size": "-2"}, "--batch-size"),
}


@pytest.mark.parametrize("case", GLUE)
def test_glue_refuses_and_writes_nothing(case, files, tmp_path):
    replaced, named = GLUE[case]
    options = {"--checkpoint": "{finetuned}", "--pretrain-data": "{corpus}", "--glue-task": "SST-2",
               "--data": "{glue}", "--out": str(tmp_path / "submission"), **replaced}
    args = [part.format(**files) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-predict", "glue", *args, "--cpu", expect_ok=False)
    assert_user_error(out, "segatron-predict", named.format(**files))
    assert listing(tmp_path) == {}


SQUAD = {
    "fine-tuned for GLUE": ({"--checkpoint": "{finetuned}"}, "{finetuned}: a fine-tuned checkpoint"),
    "pre-trained checkpoint": ({"--checkpoint": "{pretrained}"}, "{pretrained}: a pre-trained checkpoint"),
    "truncated checkpoint": ({"--checkpoint": "{truncated}"}, "{truncated}"),
    "max-answer-tokens 0": ({"--max-answer-tokens": "0"}, "--max-answer-tokens"),
    "batch-size 0": ({"--batch-size": "0"}, "--batch-size"),
}


@pytest.mark.parametrize("case", SQUAD)
def test_squad_refuses_and_writes_nothing(case, files, tmp_path):
    replaced, named = SQUAD[case]
    options = {"--checkpoint": "{pretrained}", "--pretrain-data": "{corpus}", "--input": "{squad}",
               "--out": str(tmp_path / "predictions.json"), **replaced}
    args = [part.format(**files) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-predict", "squad", *args, "--cpu", expect_ok=False)
    assert_user_error(out, "segatron-predict", named.format(**files))
    assert listing(tmp_path) == {}


NER = {
    "fine-tuned for GLUE": ({"--checkpoint": "{finetuned}"}, "{finetuned}: a fine-tuned checkpoint"),
    "pre-trained checkpoint": ({"--checkpoint": "{pretrained}"}, "{pretrained}: a pre-trained checkpoint"),
    "missing input": ({"--input": "{missing}"}, "{missing}: CoNLL file not found"),
    "ragged input": ({"--input": "{ragged}"}, "{ragged}:2: 2 columns"),
    "output is the input": ({"--out": "{conll}"}, "{conll}: --out is the same file as --input"),
    "batch-size 0": ({"--batch-size": "0"}, "--batch-size"),
}


@pytest.mark.parametrize("case", NER)
def test_ner_refuses_and_writes_nothing(case, files, tmp_path):
    replaced, named = NER[case]
    conll, ragged = tmp_path / "in" / "test.txt", tmp_path / "in" / "ragged.txt"
    conll.parent.mkdir()
    conll.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n")
    ragged.write_text("EU NNP B-NP B-ORG\nrejects O\n")
    before = listing(tmp_path / "in")
    options = {"--checkpoint": "{pretrained}", "--pretrain-data": "{corpus}", "--input": str(conll),
               "--out": str(tmp_path / "out" / "test.predicted"), **replaced}
    values = {**files, "conll": conll, "ragged": ragged}
    args = [part.format(**values) for option, value in options.items() for part in (option, value)]
    out = run_cli("segatron-predict", "ner", *args, "--cpu", expect_ok=False)
    assert_user_error(out, "segatron-predict", named.format(**values))
    assert listing(tmp_path / "out") is None and listing(tmp_path / "in") == before
