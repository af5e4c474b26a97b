"""Fine-tuning takes ELECTRA's discriminator: fairseq-train --restore-file of a pre-trained ELECTRA checkpoint builds
the discriminator alone (with the shared embeddings, without the generator), segatron-predict and from_pretrained
read the fine-tuned checkpoint, and a pre-trained one serves the SegaBERT hub as its discriminator."""
import random

import pytest
import torch
from conftest import FINETUNING_WORDS, fairseq_train, run_cli

RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]


def _sst2(directory):
    directory.mkdir()
    rng = random.Random(3)
    rows = [(" ".join(rng.choice(FINETUNING_WORDS[:12]) for _ in range(5)), str(rng.randint(0, 1))) for _ in range(40)]
    for name in ("train.tsv", "dev.tsv"):
        (directory / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows))
    test = "".join(f"{k}\t{t}\n" for k, (t, _) in enumerate(rows[:7]))
    (directory / "test.tsv").write_text("index\tsentence\n" + test)
    return directory


@pytest.mark.parametrize("arch", ["segabert_electra_tiny", "segabert_bert_electra_tiny"])
def test_glue_fine_tuning_takes_the_discriminator(arch, electra_checkpoints, segabert_corpus, tmp_path):
    from segatron_fairseq.models.segabert import SegaBERTModel

    glue = _sst2(tmp_path / "SST-2")
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics",
                        save_dir=tmp_path / "ft", lr=1e-7,
                        extra=["--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--restore-file",
                               electra_checkpoints[arch], *RESET, "--batch-size", 8, "--max-update", 2,
                               "--no-epoch-checkpoints"])
    assert "the discriminator alone: leaving out" in out
    pretrained = torch.load(electra_checkpoints[arch], weights_only=False)["model"]
    tuned = torch.load(tmp_path / "ft" / "checkpoint_last.pt", weights_only=False)["model"]
    assert not [k for k in tuned if k.startswith("generator.") or ".rtd_head." in k or ".lm_head." in k]
    assert "classification_heads.sentence_classification_head.out_proj.weight" in tuned
    for key in ("encoder.sentence_encoder.embed_tokens.weight", "encoder.sentence_encoder.layers.1.fc2.weight",
                "encoder.sentence_encoder.embedding_projection.weight"):
        torch.testing.assert_close(tuned[key], pretrained[key], rtol=0, atol=1e-4)  # loaded, barely moved
    assert "generator.lm_head.bias" in pretrained and "encoder.rtd_head.dense.weight" in pretrained

    out = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                  "--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--data", glue,
                  "--out", tmp_path / "submission", "--cpu")
    assert "7 predictions -> SST-2.tsv" in out
    assert len((tmp_path / "submission" / "SST-2.tsv").read_text().splitlines()) == 8

    hub = SegaBERTModel.from_pretrained(str(tmp_path / "ft"), "checkpoint_last.pt", str(segabert_corpus))
    assert hub.model.generator is None
    encoded = hub.encode("w1 w2 w3 .")
    assert hub.predict("sentence_classification_head", encoded).shape == (1, 2)


@pytest.mark.parametrize("arch", ["segabert_electra_tiny", "segabert_bert_electra_tiny"])
def test_a_pretrained_electra_checkpoint_serves_the_hub_as_its_discriminator(arch, electra_checkpoints,
                                                                            segabert_corpus):
    from segatron_fairseq.models.segabert_electra import SegaBERTElectraModel

    path = electra_checkpoints[arch]
    hub = SegaBERTElectraModel.from_pretrained(str(path.parent), path.name, str(segabert_corpus))
    encoded = hub.encode("w1 w2 w3 .\nw4 w5 .")
    features = hub.extract_features(encoded)
    assert features.shape == (1, encoded["src_tokens"].size(1), 64)
    with torch.no_grad():
        assert hub.model.discriminate(**encoded).shape == encoded["src_tokens"].shape
    with pytest.raises(ValueError, match="fill_mask needs a masked-LM head, and this model has none"):
        hub.fill_mask("w1 <mask> w3 .")


def test_segatron_predict_refuses_a_pretrained_electra_checkpoint(electra_checkpoints, segabert_corpus, tmp_path):
    glue = _sst2(tmp_path / "SST-2")
    out = run_cli("segatron-predict", "glue", "--checkpoint", electra_checkpoints["segabert_electra_tiny"],
                  "--pretrain-data", segabert_corpus, "--glue-task", "SST-2", "--data", glue,
                  "--out", tmp_path / "submission", "--cpu", expect_ok=False)
    assert "a pre-trained checkpoint (task segabert_mlm)" in out
