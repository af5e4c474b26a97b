"""fairseq's own tools (through the patch's ``exit_on_input_error``, around ``call_main``) end with one line
for a missing file and for a checkpoint whose dictionary is not the one of --data."""
from conftest import PLUGIN_DIR, fairseq_train, run_cli, run_cli_refused
from corpus import make_documents, write_wikitext

EVAL = ["--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--cpu", "--tgt-len", 16]


def test_eval_lm_on_a_split_that_is_missing(segatron_xl_trained):
    data = segatron_xl_trained / "bin"
    refusal = run_cli_refused("fairseq-eval-lm", data, *EVAL, "--path", segatron_xl_trained / "ckpt" /
                              "checkpoint_last.pt", "--gen-subset", "test")
    assert refusal.stderr.splitlines()[-1].startswith(f"fairseq-eval-lm: error: split {data / 'test'} is incomplete"
                                                      f": missing {data / 'test.bin'}"), refusal.output[-3000:]
    assert "Traceback" not in refusal.output


def test_eval_lm_with_a_checkpoint_of_another_dictionary(segatron_xl_trained, tmp_path):
    write_wikitext(tmp_path / "other.txt", make_documents(8, seed=3))
    other = tmp_path / "bin"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp_path / "other.txt",
            "--validpref", tmp_path / "other.txt", "--destdir", other, "--nwordssrc", 40)
    checkpoint = segatron_xl_trained / "ckpt" / "checkpoint_last.pt"
    trained_entries = len((segatron_xl_trained / "bin" / "dict.txt").read_text().splitlines()) + 4
    refusal = run_cli_refused("fairseq-eval-lm", other, *EVAL, "--path", checkpoint, "--gen-subset", "valid")
    assert refusal.stderr.splitlines()[-1] == (
        f"fairseq-eval-lm: error: {checkpoint}: trained with a dictionary of {trained_entries} entries, but "
        f"{other / 'dict.txt'} has 40 (decoder.embed_tokens.weight); use the data the checkpoint was trained on"), \
        refusal.output[-3000:]
    assert "Traceback" not in refusal.output


def test_eval_lm_with_a_checkpoint_of_a_model_the_task_does_not_read(segatron_xl_trained, segabert_checkpoint,
                                                                     tmp_path):
    """--task segatron_lm reads Segatron-XL (and Transformer-XL): fairseq's transformer_lm (whose forward takes no
    segment starts) and SegaBERT (whose dictionary differs too) are refused in one line naming the model."""
    data = segatron_xl_trained / "bin"
    fairseq_train(data, task="language_modeling", arch="transformer_lm", criterion="cross_entropy",
                  save_dir=tmp_path / "lm", extra=["--decoder-layers", 1, "--decoder-embed-dim", 16,
                                                   "--decoder-ffn-embed-dim", 32, "--decoder-attention-heads", 2,
                                                   "--tokens-per-sample", 16, "--batch-size", 4, "--max-update", 1])
    for checkpoint, arch, model in ((tmp_path / "lm" / "checkpoint_last.pt", "transformer_lm",
                                     "TransformerLanguageModel"),
                                    (segabert_checkpoint, "segabert_tiny", "SegaBERTModel")):
        refusal = run_cli_refused("fairseq-eval-lm", data, *EVAL, "--path", checkpoint, "--gen-subset", "valid")
        assert refusal.stderr.splitlines()[-1] == (
            f"fairseq-eval-lm: error: the checkpoint holds a {arch} model ({model}), but --task segatron_lm reads "
            f"segatron_xl models; pass the --task it was trained with"), refusal.output[-3000:]
        assert "Traceback" not in refusal.output


def test_fairseq_train_of_a_model_the_task_does_not_read(segatron_xl_trained, tmp_path):
    out = fairseq_train(segatron_xl_trained / "bin", task="segatron_lm", arch="segabert_tiny",
                        criterion="cross_entropy", save_dir=tmp_path / "lm", expect_ok=False,
                        extra=["--batch-size", 2, "--max-update", 1])
    assert "ValueError: --arch segabert_tiny: --task segatron_lm reads segatron_xl models, not SegaBERTModel" in out, \
        out[-3000:]
    assert not (tmp_path / "lm" / "checkpoint_last.pt").exists()
