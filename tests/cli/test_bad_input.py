"""Every console script against the mistakes users make: a file that is missing, empty, a directory, not UTF-8,
truncated or of the wrong kind, and counts of zero or below. Each must end with one clear line on stderr
(``PROG: error: ...`` naming the file or option), a non-zero exit status, no traceback, and every file in the
test's folder as it was (nothing written, nothing deleted).

A case names the fixtures it needs (the session's tiny trained models) and builds its arguments from these paths:
``{missing}``, ``{empty}``, ``{folder}``, ``{latin1}``, ``{notes}`` (plain text), ``{wikitext}``, ``{sts}``, ``{state}``
(a small state dict), ``{xl_config}``, ``{dict_txt}``, ``{truncated}`` (the first half of a Segatron-XL checkpoint),
``{xl}`` / ``{xl_data}`` (that checkpoint and its corpus; ``{valid}``: its valid split as ``--data DIR --split
valid``), ``{segabert}`` / ``{segabert_data}``, ``{cross_thought}`` / ``{cross_thought_data}``, ``{cloze}`` /
``{cloze_data}``, ``{out}`` (an output path in the folder).
``segatron-components`` reads no input and is not here.
"""
import json
import shutil
from pathlib import Path

import pytest
import torch
from cli_errors import Case, assert_refused, listing
from conftest import run_cli_refused

LOG = "--log-format simple"
CASES = {
    # the binarizer and its tools
    "preprocess-missing": Case("segatron-preprocess", "--trainpref {missing} --destdir {out}", "missing.txt"),
    "preprocess-folder": Case("segatron-preprocess", "--trainpref {folder} --destdir {out}", "folder"),
    "preprocess-latin1": Case("segatron-preprocess", "--trainpref {latin1} --destdir {out}", "latin1.txt"),
    "preprocess-empty": Case("segatron-preprocess", "--trainpref {empty} --destdir {out}", "empty"),
    "preprocess-workers-0": Case("segatron-preprocess", "--trainpref {notes} --destdir {out} --workers 0",
                                 "--workers"),
    "preprocess-destdir-file": Case("segatron-preprocess", "--trainpref {notes} --destdir {notes}", "notes.txt"),
    "inspect-missing": Case("segatron-inspect", "{missing} train 0", "missing.txt"),
    "inspect-not-a-corpus": Case("segatron-inspect", "{folder} train 0", "folder"),
    "inspect-item-out-of-range": Case("segatron-inspect", "{xl_data} valid 1000000", "1000000",
                                      ("segatron_xl_trained",)),
    # (commit-safety) destinations that are files or lie under one
    "preprocess-destdir-under-a-file": Case("segatron-preprocess", "--trainpref {notes} --destdir {notes}/bin",
                                            "notes.txt/bin: --destdir cannot be used (Not a directory)"),
    "inspect-destdir-file": Case("segatron-inspect", "{notes} train 0", "notes.txt: a file, not a"),
    "inspect-destdir-under-a-file": Case("segatron-inspect", "{notes}/bin train 0",
                                         "notes.txt/bin: Not a directory"),
    "inspect-missing-destdir": Case("segatron-inspect", "{missing}/bin train 0", "missing.txt/bin: no such directory"),
    "split-missing": Case("segatron-split-wikitext", "{missing} {out}", "missing.txt"),
    "split-folder": Case("segatron-split-wikitext", "{folder} {out}", "folder"),
    "split-latin1": Case("segatron-split-wikitext", "{latin1} {out}", "latin1.txt"),
    "split-output-is-a-file": Case("segatron-split-wikitext", "{wikitext} {notes}", "notes.txt"),
    "split-negative": Case("segatron-split-wikitext", "{wikitext} {out} --valid-articles -1", "--valid-articles"),
    "split-input-is-an-output": Case("segatron-split-wikitext", "{split_input} {here}/split --overwrite",
                                     "the input is one of the outputs"),
    "split-zero": Case("segatron-split-wikitext", "{wikitext} {out} --valid-articles 0 --test-articles 0",
                       "articles"),
    # training comparisons
    "compare-lm-missing-data": Case("segatron-compare-lm", "--data {missing} --workdir {out}", "missing.txt"),
    "compare-lm-max-update-0": Case("segatron-compare-lm", "--data {xl_data} --workdir {out} --max-update 0",
                                    "--max-update", ("segatron_xl_trained",)),
    "compare-lm-batch-size-0": Case("segatron-compare-lm", "--data {xl_data} --workdir {out} --batch-size 0",
                                    "--batch-size", ("segatron_xl_trained",)),
    "compare-lm-tgt-len-negative": Case("segatron-compare-lm", "--data {xl_data} --workdir {out} --tgt-len -4",
                                        "--tgt-len", ("segatron_xl_trained",)),
    "compare-mlm-out-exists": Case("segatron-compare-mlm", "--data {segabert_data} --workdir {out} --out {notes}",
                                   "notes.txt: --out exists", ("segabert_corpus",)),
    "compare-mlm-out-is-its-dictionary": Case("segatron-compare-mlm", "--data {segabert_data} --workdir {out} --out "
                                              "{segabert_data}/dict.txt --overwrite",
                                              "dict.txt: --out is the same file", ("segabert_corpus",)),
    "compare-mlm-missing-data": Case("segatron-compare-mlm", "--data {missing} --workdir {out}", "missing.txt"),
    "compare-mlm-eval-every-0": Case("segatron-compare-mlm", "--data {segabert_data} --workdir {out} --eval-every 0",
                                     "--eval-every", ("segabert_corpus",)),
    "compare-mlm-max-update-0": Case("segatron-compare-mlm", "--data {segabert_data} --workdir {out} --max-update 0",
                                     "--max-update", ("segabert_corpus",)),
    # Segatron-XL analysis
    "loss-by-boundary-missing": Case("segatron-loss-by-boundary", "{missing} {valid}", "missing.txt",
                                     ("segatron_xl_trained",)),
    "loss-by-boundary-empty": Case("segatron-loss-by-boundary", "{empty} {valid}", "empty", ("segatron_xl_trained",)),
    "loss-by-boundary-folder": Case("segatron-loss-by-boundary", "{folder} {valid}", "folder",
                                    ("segatron_xl_trained",)),
    "loss-by-boundary-truncated": Case("segatron-loss-by-boundary", "{truncated} {valid}", "truncated.pt",
                                       ("segatron_xl_trained",)),
    "loss-by-boundary-text": Case("segatron-loss-by-boundary", "{notes} {valid}", "notes.txt",
                                  ("segatron_xl_trained",)),
    "loss-by-boundary-wrong-kind": Case("segatron-loss-by-boundary", "{segabert} {valid}", "segabert",
                                        ("segatron_xl_trained", "segabert_checkpoint")),
    "loss-by-boundary-tgt-len-0": Case("segatron-loss-by-boundary", "{xl} {valid} --tgt-len 0", "--tgt-len",
                                       ("segatron_xl_trained",)),
    "loss-by-boundary-missing-data": Case("segatron-loss-by-boundary", "{xl} --data {missing}", "missing.txt",
                                          ("segatron_xl_trained",)),
    "plot-attention-missing-model-dir": Case("segatron-plot", "attention --model-dir {missing} --data {xl_data} "
                                             "--text {wikitext} --out {out}", "missing.txt", ("segatron_xl_trained",)),
    "plot-attention-truncated": Case("segatron-plot", "attention --model-dir {truncated_dir} --checkpoint-file "
                                     "truncated.pt --data {xl_data} --text {wikitext} --out {out}", "truncated.pt",
                                     ("segatron_xl_trained",)),
    "plot-attention-latin1-text": Case("segatron-plot", "attention --model-dir {xl_dir} --checkpoint-file "
                                       "checkpoint_last.pt --data {xl_data} --text {latin1} --out {out}",
                                       "latin1.txt", ("segatron_xl_trained",)),
    "plot-attention-empty-text": Case("segatron-plot", "attention --model-dir {xl_dir} --checkpoint-file "
                                      "checkpoint_last.pt --data {xl_data} --text {empty} --out {out}", "empty",
                                      ("segatron_xl_trained",)),
    "plot-curves-missing": Case("segatron-plot", "curves {missing} --out {out}", "missing.txt"),
    "plot-curves-latin1": Case("segatron-plot", "curves {latin1} --out {out}", "latin1.txt"),
    "plot-curves-empty": Case("segatron-plot", "curves {empty} --out {out}", "empty"),
    "plot-curves-out-exists": Case("segatron-plot", "curves {wikitext} --out {picture}", "picture.png: --out exists"),
    "plot-curves-out-is-input": Case("segatron-plot", "curves {picture}.png --out {picture} --overwrite",
                                     "--out is the same file"),
    "plot-boundary-truncated": Case("segatron-plot", "boundary {truncated} {valid} --out {out}",
                                    "truncated.pt", ("segatron_xl_trained",)),
    "plot-boundary-tgt-len-0": Case("segatron-plot", "boundary {xl} {valid} --tgt-len 0 --out {out}",
                                    "--tgt-len", ("segatron_xl_trained",)),
    # Cross-Thought ranking
    "rank-missing-path": Case("cross-thought-rank", "--path {missing} --data {cross_thought_data} --questions {notes} "
                              "--embeddings {out}.pt --output {out}.jsonl", "missing.txt", ("cross_thought_trained",)),
    "rank-truncated": Case("cross-thought-rank", "--path {truncated} --data {cross_thought_data} --questions {notes} "
                           "--embeddings {out}.pt --output {out}.jsonl", "truncated.pt",
                           ("cross_thought_trained", "segatron_xl_trained")),
    "rank-wrong-kind": Case("cross-thought-rank", "--path {xl} --data {cross_thought_data} --questions {notes} "
                            "--embeddings {out}.pt --output {out}.jsonl", "segatron_xl",
                            ("cross_thought_trained", "segatron_xl_trained")),
    "rank-latin1-questions": Case("cross-thought-rank", "--path {cross_thought} --data {cross_thought_data} "
                                  "--questions {latin1} --embeddings {out}.pt --output {out}.jsonl", "latin1.txt",
                                  ("cross_thought_trained",)),
    "rank-batch-size-0": Case("cross-thought-rank", "--path {cross_thought} --data {cross_thought_data} --questions "
                              "{notes} --embeddings {out}.pt --output {out}.jsonl --batch-size 0", "--batch-size",
                              ("cross_thought_trained",)),
    "rank-output-is-a-folder": Case("cross-thought-rank", "--path {cross_thought} --data {cross_thought_data} "
                                    "--questions {notes} --passages {notes} --embeddings {out}.pt --output {folder}",
                                    "folder", ("cross_thought_trained",)),
    "rank-embeddings-not-its-cache": Case("cross-thought-rank", "--path {cross_thought} --data {cross_thought_data} "
                                          "--questions {notes} --passages {notes} --embeddings {xl_copy} --output "
                                          "{out}.jsonl", "checkpoint_copy.pt",
                                          ("cross_thought_trained", "segatron_xl_trained")),
    "rank-output-exists": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} "
                               "--embeddings {out}.pt --output {wikitext}", "wiki.txt: --output exists"),
    "rank-output-is-questions": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} "
                                     "--embeddings {out}.pt --output {notes} --overwrite",
                                     "--output is the same file as --questions"),
    "rank-bad-model-overrides": Case("cross-thought-rank", "--path {missing} --data {folder} --questions {notes} "
                                     "--embeddings {out}.pt --output {out}.jsonl --model-overrides {{'dropout':",
                                     "--model-overrides"),
    # conversion
    "import-out-holds-dict": Case("segatron-import", "hf-transformer-xl --model-dir {folder} --out {here}",
                                  "--out holds dict.txt"),
    "import-out-is-a-file": Case("segatron-import", "authors-cross-thought --checkpoint {state} --dict {dict_txt} "
                                 "--out {notes}", "notes.txt: --out exists and is not a directory"),
    "import-out-is-model-dir": Case("segatron-import", "authors-segabert --model-dir {folder} --out {folder}",
                                    "--out is the same file as --model-dir"),
    "import-xl-missing-state": Case("segatron-import", "authors-segatron-xl --state {missing} --config {xl_config} "
                                    "--vocab {notes} --out {out}", "missing.txt"),
    "import-xl-truncated-state": Case("segatron-import", "authors-segatron-xl --state {truncated} --config "
                                      "{xl_config} --vocab {notes} --out {out}", "truncated.pt",
                                      ("segatron_xl_trained",)),
    "import-xl-config-without-n-token": Case("segatron-import", "authors-segatron-xl --state {truncated} --config "
                                             "{config_without_n_token} --vocab {notes} --out {out}", "n_token",
                                             ("segatron_xl_trained",)),
    "import-xl-latin1-vocab": Case("segatron-import", "authors-segatron-xl --state {state} --config {xl_config} "
                                   "--vocab {latin1} --out {out}", "latin1.txt"),
    "import-hf-xl-missing-dir": Case("segatron-import", "hf-transformer-xl --model-dir {missing} --out {out}",
                                     "missing.txt"),
    "import-hf-xl-tgt-len-0": Case("segatron-import", "hf-transformer-xl --model-dir {folder} --tgt-len 0 --out {out}",
                                   "--tgt-len"),
    "import-segabert-empty-dir": Case("segatron-import", "authors-segabert --model-dir {folder} --out {out}",
                                      "folder"),
    "import-cross-thought-latin1-dict": Case("segatron-import", "authors-cross-thought --checkpoint {truncated} "
                                             "--dict {latin1} --out {out}", "latin1.txt", ("segatron_xl_trained",)),
    "import-cross-thought-truncated": Case("segatron-import", "authors-cross-thought --checkpoint {truncated} "
                                           "--dict {dict_txt} --out {out}", "truncated.pt", ("segatron_xl_trained",)),
    "export-out-exists": Case("segatron-export", "hf --checkpoint {missing} --data {folder} --out {folder}",
                              "folder: --out exists"),
    "export-missing": Case("segatron-export", "hf --checkpoint {missing} --data {segabert_data} --out {out}",
                           "missing.txt", ("segabert_corpus",)),
    "export-truncated": Case("segatron-export", "hf --checkpoint {truncated} --data {segabert_data} --out {out}",
                             "truncated.pt", ("segabert_corpus", "segatron_xl_trained")),
    "export-wrong-kind": Case("segatron-export", "hf --checkpoint {cloze} --data {cloze_data} --out {out}",
                              "cloze_two_tower", ("cloze_trained",)),
    "export-wrong-dictionary": Case("segatron-export", "hf --checkpoint {segabert} --data {xl_data} --out {out}",
                                    "dict.txt", ("segabert_checkpoint", "segatron_xl_trained")),
    # predictions and embeddings
    "predict-glue-pretrained": Case("segatron-predict", "glue --checkpoint {segabert} --pretrain-data {segabert_data} "
                                    "--glue-task RTE --data {glue} --out {out}", "fine-tuned",
                                    ("segabert_checkpoint", "segabert_corpus")),
    "predict-glue-batch-size-0": Case("segatron-predict", "glue --checkpoint {segabert} --pretrain-data "
                                      "{segabert_data} --glue-task RTE --data {glue} --out {out} --batch-size 0",
                                      "--batch-size", ("segabert_checkpoint", "segabert_corpus")),
    "predict-squad-truncated": Case("segatron-predict", "squad --checkpoint {truncated} --pretrain-data "
                                    "{segabert_data} --input {notes} --out {out}", "truncated.pt",
                                    ("segabert_corpus", "segatron_xl_trained")),
    "predict-squad-out-is-input": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                       "--input {notes} --out {notes} --overwrite",
                                       "notes.txt: --out is the same file as --input"),
    "predict-squad-out-is-checkpoint": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                            "--input {notes} --out {state} --overwrite",
                                            "state.pt: --out is the same file as --checkpoint"),
    "predict-squad-outputs-the-same": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                           "--input {notes} --out {out}.json --null-odds {out}.json",
                                           "--null-odds is the same file as --out"),
    "predict-squad-out-exists": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                     "--input {notes} --out {wikitext}", "wiki.txt: --out exists"),
    "predict-squad-null-odds-exists": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                           "--input {notes} --out {out}.json --null-odds {wikitext}",
                                           "wiki.txt: --null-odds exists"),
    "predict-squad-nan-threshold": Case("segatron-predict", "squad --checkpoint {state} --pretrain-data {folder} "
                                        "--input {notes} --out {out}.json --no-answer-threshold nan",
                                        "--no-answer-threshold"),
    "predict-glue-submission-exists": Case("segatron-predict", "glue --checkpoint {state} --pretrain-data {folder} "
                                           "--glue-task RTE --data {glue} --out {here}", "RTE.tsv: --out exists"),
    "sts-one-pair": Case("segatron-sts", "{sts_one} --checkpoint {missing} --data {folder}", "sts_one.tsv"),
    "sts-constant-gold": Case("segatron-sts", "{sts_constant} --checkpoint {missing} --data {folder}",
                              "undefined"),
    "sts-nan-score": Case("segatron-sts", "{sts_nan} --checkpoint {missing} --data {folder}", "sts_nan.tsv: line 2"),
    "sts-segatron-xl": Case("segatron-sts", "{sts} --checkpoint {xl} --data {xl_data}", "segatron_xl",
                            ("segatron_xl_trained",)),
    "sts-missing-file": Case("segatron-sts", "{missing} --checkpoint {segabert} --data {segabert_data}", "missing.txt",
                             ("segabert_checkpoint", "segabert_corpus")),
    "sts-latin1-file": Case("segatron-sts", "{latin1} --checkpoint {segabert} --data {segabert_data}", "latin1.txt",
                            ("segabert_checkpoint", "segabert_corpus")),
}


def _inputs(folder: Path, request, needs) -> dict:
    """The paths a case's arguments name (see the module doc), written into ``folder``."""
    (folder / "empty").write_text("")
    (folder / "folder").mkdir()
    (folder / "latin1.txt").write_bytes("caf\xe9 na\xefve\n".encode("latin-1"))
    (folder / "notes.txt").write_text("some notes\n")
    (folder / "wiki.txt").write_text("".join(f" = Article {n} = \n\n One sentence . Another one . \n\n"
                                             for n in range(30)))
    (folder / "sts.tsv").write_text("a b\ta c\t3.0\nb c\tc a\t1.0\n")
    (folder / "sts_one.tsv").write_text("a b\ta c\t3.0\n")
    (folder / "sts_constant.tsv").write_text("a b\ta c\t3.0\nb c\tc a\t3.0\n")
    (folder / "sts_nan.tsv").write_text("a b\ta c\t3.0\nb c\tc a\tnan\n")
    (folder / "glue").mkdir()
    (folder / "glue" / "test.tsv").write_text("index\tsentence1\tsentence2\n0\ta b\tb c\n")
    (folder / "RTE.tsv").write_text("index\tprediction\n")
    (folder / "split").mkdir()
    (folder / "split" / "wiki.train.tokens").write_text(" = Article = \n\n One . \n\n")
    (folder / "picture.png").write_bytes(b"\x89PNG")
    config = dict(n_token=2, n_layer=1, n_head=1, d_model=4, d_head=4, d_inner=4, dropout=0.0, dropatt=0.0, mem_len=4,
                  clamp_len=-1, tgt_len=4, div_val=1, cutoffs=[])
    (folder / "xl_config.json").write_text(json.dumps(config))
    del config["n_token"]
    (folder / "config_without_n_token.json").write_text(json.dumps(config))
    (folder / "dict.txt").write_text("a 1\nb 1\n")
    torch.save({"word_emb.emb_layers.0.weight": torch.zeros(2, 4)}, folder / "state.pt")
    paths = {name: str(folder / file) for name, file in (
        ("missing", "missing.txt"), ("empty", "empty"), ("folder", "folder"), ("latin1", "latin1.txt"),
        ("notes", "notes.txt"), ("wikitext", "wiki.txt"), ("sts", "sts.tsv"), ("xl_config", "xl_config.json"),
        ("config_without_n_token", "config_without_n_token.json"), ("dict_txt", "dict.txt"), ("state", "state.pt"),
        ("out", "out"), ("sts_one", "sts_one.tsv"), ("sts_constant", "sts_constant.tsv"), ("sts_nan", "sts_nan.tsv"),
        ("glue", "glue"), ("split_input", "split/wiki.train.tokens"), ("picture", "picture"))}
    paths["here"] = str(folder)
    if "segatron_xl_trained" in needs:
        trained = request.getfixturevalue("segatron_xl_trained")
        checkpoint = trained / "ckpt" / "checkpoint_last.pt"
        (folder / "truncated").mkdir()
        data = checkpoint.read_bytes()
        (folder / "truncated" / "truncated.pt").write_bytes(data[: len(data) // 2])
        shutil.copy(checkpoint, folder / "checkpoint_copy.pt")
        paths.update(xl=str(checkpoint), xl_dir=str(checkpoint.parent), xl_data=str(trained / "bin"),
                     truncated=str(folder / "truncated" / "truncated.pt"), truncated_dir=str(folder / "truncated"),
                     xl_copy=str(folder / "checkpoint_copy.pt"), valid=f"--data {trained / 'bin'} --split valid")
    if "segabert_checkpoint" in needs:
        paths["segabert"] = str(request.getfixturevalue("segabert_checkpoint"))
    if "segabert_corpus" in needs:
        paths["segabert_data"] = str(request.getfixturevalue("segabert_corpus"))
    if "cross_thought_trained" in needs:
        trained = request.getfixturevalue("cross_thought_trained")
        paths.update(cross_thought=str(trained / "ckpt" / "checkpoint_last.pt"),
                     cross_thought_data=str(trained / "bin"))
    if "cloze_trained" in needs:
        trained = request.getfixturevalue("cloze_trained")
        paths.update(cloze=str(trained / "ckpt" / "checkpoint_last.pt"), cloze_data=str(trained / "bin"))
    return paths


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_mistake_ends_in_one_line_naming_it(case, tmp_path, request):
    folder = tmp_path / "work"
    folder.mkdir()
    paths = _inputs(folder, request, case.needs)
    before = listing(folder)
    refusal = run_cli_refused(case.program, *case.args.format(**paths).split(), cwd=folder)
    assert_refused(refusal, case.program, case.says)
    assert listing(folder) == before, "the folder changed"
