"""SpanBERT on SegaBERT: task segabert_mlm with --mask-span span|sentence and --span-boundary-objective, criterion
span_boundary_mlm (masked LM + span boundary objective) by hand, pre-training, validation and fine-tuning from it."""
import math
import re

import pytest
import torch
from conftest import fairseq_train, run_cli
from omegaconf import OmegaConf
from tiny_models import build, tiny_args

SBO = ["--mask-span", "span", "--span-boundary-objective"]


def _task(corpus, **options):
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    cfg = OmegaConf.merge(OmegaConf.structured(SegaBERTMLMConfig),
                          {"data": str(corpus), "seed": 1, "tokens_per_sample": 64, **options})
    return SegaBERTMLMTask.setup_task(cfg)


@pytest.mark.parametrize("arch", ["segabert_tiny", "segabert_bert_tiny"])
def test_criterion_is_the_masked_lm_plus_the_boundary_loss_by_hand(segabert_corpus, arch):
    """loss / sample size = MLM / m + SBO / (n + 1) (SpanBERT's); the parts logged apart."""
    from segatron_fairseq.criterions.span_boundary_mlm import SpanBoundaryMLMLoss

    task = _task(segabert_corpus, mask_span="span", span_boundary_objective=True)
    model = build(tiny_args(arch, width=()), task)
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    sample = dataset.collater([dataset[i] for i in range(4)])
    criterion = SpanBoundaryMLMLoss(task)
    with torch.no_grad():
        loss, sample_size, log = criterion(model, sample)
        features, _ = model(**sample["net_input"], features_only=True)
        log_probs = torch.log_softmax(model.encoder.lm_head(features), dim=-1)
    target, pad = sample["target"], task.dictionary.pad()
    mlm, m = 0.0, 0
    sbo, n = 0.0, 0
    head = model.task_head("span_boundary")
    words = model.encoder.sentence_encoder.embed_tokens.weight
    for b in range(target.size(0)):
        for t in range(target.size(1)):
            if target[b, t] == pad:
                continue
            m += 1
            mlm -= float(log_probs[b, t, target[b, t]])
            offset = int(sample["span_offset"][b, t])
            if offset < 0:
                continue
            n += 1
            s, e = t - offset, t  # the span's first token is offset tokens to the left
            while e + 1 < target.size(1) and target[b, e + 1] != pad:
                e += 1
            assert int(sample["span_left"][b, t]) == s - 1 and int(sample["span_right"][b, t]) == e + 1
            with torch.no_grad():
                logits = head(features[b, s - 1][None], features[b, e + 1][None], torch.tensor([offset]), words)
            sbo -= float(torch.log_softmax(logits, -1)[0, target[b, t]])
    assert m > 0 and n > 0 and sample_size == m
    assert float(loss) / sample_size == pytest.approx(mlm / m + sbo / (n + 1), rel=1e-5)
    assert float(log["mlm_loss"]) == pytest.approx(mlm, rel=1e-5) and float(log["sbo_loss"]) == pytest.approx(sbo,
                                                                                                            rel=1e-5)
    assert log["sbo_pairs"] == n


def test_token_mode_batches_are_unchanged_and_carry_no_spans(segabert_corpus):
    from fairseq.data import MaskTokensDataset

    from segatron_fairseq.data import DocumentExampleDataset, FieldDataset, SegmentIndexedDataset

    task = _task(segabert_corpus)
    task.load_dataset("valid")
    item = task.dataset("valid")[3]
    assert not any(key.startswith("span_") for key in item)
    d = task.dictionary
    examples = DocumentExampleDataset(SegmentIndexedDataset(str(segabert_corpus / "valid"), len(d)), d.bos(),
                                      d.eos(), 64, task.index_limits, 1)
    source, target = MaskTokensDataset.apply_mask(FieldDataset(examples, "tokens"), task.dictionary,
                                                  pad_idx=task.dictionary.pad(), mask_idx=task.mask_idx, seed=1)
    assert torch.equal(item["net_input.src_tokens"], source[3]) and torch.equal(item["target"], target[3])


def test_span_boundary_options_refuse_what_does_not_fit(segabert_corpus):
    from segatron_fairseq.criterions.span_boundary_mlm import SpanBoundaryMLMLoss

    with pytest.raises(ValueError, match="^--span-boundary-objective needs --criterion span_boundary_mlm, "
                                         "not masked_lm$"):
        _task(segabert_corpus, mask_span="span", span_boundary_objective=True).build_criterion(
            OmegaConf.create({"_name": "masked_lm"}))
    with pytest.raises(ValueError, match="^--criterion span_boundary_mlm needs --task segabert_mlm "
                                         "--span-boundary-objective$"):
        SpanBoundaryMLMLoss(_task(segabert_corpus, mask_span="span"))


@pytest.fixture(scope="module")
def sbo_checkpoint(segabert_corpus, tmp_path_factory):
    """segabert_tiny pre-trained 2 updates with span masking and the span boundary objective, and its log."""
    save = tmp_path_factory.mktemp("sbo")
    log = fairseq_train(segabert_corpus, task="segabert_mlm", arch="segabert_tiny", criterion="span_boundary_mlm",
                        save_dir=save, extra=[*SBO, "--tokens-per-sample", 64, "--batch-size", 8, "--max-update", 2,
                                              "--no-epoch-checkpoints", "--log-format", "simple",
                                              "--log-interval", 1])
    return save / "checkpoint_last.pt", log


@pytest.mark.parametrize("arch", ["segabert_tiny", "segabert_bert_tiny"])
@pytest.mark.parametrize("mode", ["span", "sentence"])
def test_fairseq_train_with_the_span_boundary_objective(segabert_corpus, tmp_path, arch, mode):
    out = fairseq_train(segabert_corpus, task="segabert_mlm", arch=arch, criterion="span_boundary_mlm",
                        save_dir=tmp_path, extra=["--mask-span", mode, "--span-boundary-objective",
                                                  "--tokens-per-sample", 64, "--batch-size", 8, "--max-update", 2,
                                                  "--no-epoch-checkpoints", "--log-format", "simple"])
    assert "done training" in out
    assert re.search(r"valid on 'valid' subset \| loss [0-9.]+ \| mlm_loss [0-9.]+ \| sbo_loss [0-9.]+ \| "
                     r"mlm_ppl [0-9.]+ \| sbo_ppl [0-9.]+", out), out[-2000:]
    state = torch.load(tmp_path / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["model"]["task_heads.span_boundary.offset_embeddings.weight"].shape == (15, 200)
    assert state["cfg"]["task"]["mask_span"] == mode and state["cfg"]["criterion"]["_name"] == "span_boundary_mlm"


def test_validate_reports_the_masked_lm_alone(segabert_corpus, sbo_checkpoint):
    """fairseq-validate of an SBO checkpoint: its own spans (mlm_ppl and sbo_ppl), and, with --mask-span token,
    the masked LM on the token masks of a masked_lm run of the same seed."""
    checkpoint, _ = sbo_checkpoint
    common = [segabert_corpus, "--user-dir", __import__("segatron_fairseq").PLUGIN_DIR, "--task", "segabert_mlm",
              "--path", checkpoint, "--cpu", "--batch-size", 8]
    own = run_cli("fairseq-validate", *common)
    found = re.search(r"valid on 'valid' subset \| loss ([0-9.]+) \| mlm_loss ([0-9.]+) \| sbo_loss ([0-9.]+) \| "
                      r"mlm_ppl ([0-9.]+)", own)
    assert found, own[-2000:]
    assert float(found.group(4)) == pytest.approx(2 ** float(found.group(2)), rel=1e-2)
    tokens = run_cli("fairseq-validate", *common, "--mask-span", "token")
    assert "no span boundary loss" in tokens
    found = re.search(r"valid on 'valid' subset \| loss ([0-9.]+) \| mlm_loss ([0-9.]+) \| mlm_ppl", tokens)
    assert found and found.group(1) == found.group(2), tokens[-2000:]
    assert math.isfinite(float(found.group(2)))


@pytest.mark.end_to_end
def test_finetuning_and_predict_from_an_sbo_checkpoint(segabert_corpus, sbo_checkpoint, tmp_path):
    """GLUE fine-tuning leaves the pre-training head out (a warning), and segatron-predict reads the result."""
    import random

    from test_segabert_finetune import RESET, WORDS

    checkpoint, _ = sbo_checkpoint
    glue = tmp_path / "SST-2"
    glue.mkdir()
    rng = random.Random(3)
    rows = [(" ".join(rng.choice(WORDS) for _ in range(5)), str(rng.randint(0, 1))) for _ in range(24)]
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows))
    (glue / "test.tsv").write_text("index\tsentence\n" + "".join(f"{k}\t{t}\n" for k, (t, _) in enumerate(rows[:5])))
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch="segabert_tiny",
                        criterion="sentence_prediction_metrics", save_dir=tmp_path / "ft",
                        extra=["--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--restore-file",
                               checkpoint, *RESET, "--batch-size", 8, "--max-update", 2, "--no-epoch-checkpoints"])
    assert "leaving out task_heads.span_boundary.offset_embeddings.weight" in out
    state = torch.load(tmp_path / "ft" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert not any("span_boundary" in key for key in state["model"])
    out = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                  "--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--data", glue,
                  "--out", tmp_path / "submission", "--cpu")
    assert "5 predictions -> SST-2.tsv" in out


def test_cross_thought_mlm_masks_spans_and_refuses_sentences(segabert_corpus, tmp_path):
    common = ["--num-sequences", 4, "--sequence-length", 16, "--batch-size", 8, "--max-update", 1, "--no-save",
              "--disable-validation", "--log-format", "simple"]
    out = fairseq_train(segabert_corpus, task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                        save_dir=tmp_path, extra=["--mask-span", "span", *common])
    assert "done training" in out
    out = fairseq_train(segabert_corpus, task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                        save_dir=tmp_path, extra=["--mask-span", "sentence", *common], expect_ok=False)
    assert "--mask-span sentence: cross_thought_mlm's samples are a token stream without sentence indexes" in out
