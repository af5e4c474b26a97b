"""An ALBERT checkpoint (factorized, shared layers, SOP head) resumes exactly, fine-tunes through GLUE and
segatron-predict runs on it."""
import random

import pytest
import torch
from conftest import fairseq_train, run_cli

WIDTH = ["--encoder-layers", 4, "--encoder-embed-dim", 32, "--encoder-ffn-embed-dim", 64,
         "--encoder-attention-heads", 4, "--factorized-embed-dim", 16]
# fairseq 0.12.2's copies of a layer's weights for PyTorch's fused inference path
FUSED_PATH_COPIES = {"in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "fc1_weight", "fc1_bias",
                     "fc2_weight", "fc2_bias"}
RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]


def _pretrain(corpus, save_dir, max_update, *extra):
    return fairseq_train(corpus, task="segabert_mlm", arch="segabert_albert_base", criterion="masked_lm_sop",
                         save_dir=save_dir, lr=3e-3, extra=["--sentence-order-prediction", *WIDTH, "--optimizer",
                                                            "torch_lamb", "--weight-decay", 0.01,
                                                            "--tokens-per-sample", 32, "--batch-size", 8,
                                                            "--max-update", max_update, "--no-epoch-checkpoints",
                                                            "--disable-validation", "--seed", 3, *extra])


@pytest.mark.end_to_end
def test_shared_checkpoint_resumes_to_the_same_weights(segabert_corpus, tmp_path):
    """2 updates straight, and 1 update saved, reloaded (model and torch_lamb state, each shared tensor once) and
    continued to 2: the same weights; fairseq's parameter count counts a shared tensor once."""
    out = _pretrain(segabert_corpus, tmp_path / "straight", 2)
    _pretrain(segabert_corpus, tmp_path / "resumed", 1)
    resumed = _pretrain(segabert_corpus, tmp_path / "resumed", 2)
    assert "Loaded checkpoint" in resumed
    straight = torch.load(tmp_path / "straight" / "checkpoint_last.pt", weights_only=False)
    again = torch.load(tmp_path / "resumed" / "checkpoint_last.pt", weights_only=False)
    assert straight["model"].keys() == again["model"].keys()
    assert not any(".layers.1." in key for key in straight["model"])
    for key, value in straight["model"].items():
        if key.split(".")[-1] in FUSED_PATH_COPIES:
            continue  # fairseq fills them in from q, k, v, fc1, fc2 when a checkpoint loads (zeros before)
        torch.testing.assert_close(again["model"][key], value, rtol=0, atol=1e-6, msg=key)
    count = sum(v.numel() for k, v in straight["model"].items()
                if k != "encoder.lm_head.weight" and not k.endswith(".version"))  # tied; a buffer
    assert f"num. shared model params: {count:,}" in out


@pytest.mark.end_to_end
def test_albert_checkpoint_finetunes_on_glue_and_predicts(segabert_corpus, tmp_path):
    _pretrain(segabert_corpus, tmp_path / "pre", 2)
    glue = tmp_path / "SST-2"
    glue.mkdir()
    rng = random.Random(3)
    words = [f"w{i}" for i in range(12)]
    rows = [(" ".join(rng.choice(words) for _ in range(5)), str(rng.randint(0, 1))) for _ in range(40)]
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows))
    (glue / "test.tsv").write_text("index\tsentence\n" + "".join(f"{k}\t{t}\n" for k, (t, _) in enumerate(rows[:7])))
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch="segabert_albert_base",
                        criterion="sentence_prediction_metrics", save_dir=tmp_path / "ft",
                        extra=["--pretrain-data", segabert_corpus, "--glue-task", "SST-2", *WIDTH, "--restore-file",
                               tmp_path / "pre" / "checkpoint_last.pt", *RESET, "--batch-size", 8, "--max-update", 2,
                               "--no-epoch-checkpoints"])
    assert "Loaded checkpoint" in out and "sentence_order" in out  # the SOP head left out, with a warning
    state = torch.load(tmp_path / "ft" / "checkpoint_last.pt", weights_only=False)
    assert state["cfg"]["model"].share_encoder_layers == "all"
    assert not any("sentence_order" in key or ".layers.1." in key for key in state["model"])
    out = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                  "--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--data", glue,
                  "--out", tmp_path / "submission", "--cpu")
    assert "7 predictions -> SST-2.tsv" in out
    assert len((tmp_path / "submission" / "SST-2.tsv").read_text().splitlines()) == 8


@pytest.mark.end_to_end
def test_torch_lamb_under_fairseqs_fp16_optimizer(segabert_corpus, tmp_path):
    """The yamls' fp16 with torch_lamb: fairseq's FP16Optimizer keeps one fp32 copy per tensor
    (fp16_no_flatten_grads, so that the trust ratio stays per tensor) and trains."""
    out = _pretrain(segabert_corpus, tmp_path / "fp16", 2, "--fp16", "--fp16-no-flatten-grads")
    assert "loss_scale" in out and "done training" in out
