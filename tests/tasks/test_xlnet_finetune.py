"""Fine-tuning XLNet (token and Segatron positions) from a tiny xlnet_plm checkpoint through the GLUE task and
segatron-predict glue; a checkpoint of other relative positions is refused. SQuAD, RACE and NER from XLNet run in
the tests of those tasks (kind "xlnet")."""
import random
import re

import pytest
from conftest import fairseq_train, pretrained_kind
from glue_pairs import predict_glue_pairs, write_glue_pairs

RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]


def _glue_pairs(glue, seed: int = 3):
    """RTE-style pairs of FINETUNING_WORDS."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(12)]
    write_glue_pairs(glue, [(" ".join(rng.choices(words, k=5)), " ".join(rng.choices(words, k=4)),
                             rng.choice(["entailment", "not_entailment"])) for _ in range(24)])


@pytest.mark.parametrize("kind", ["xlnet", "xlnet_token"])
def test_glue_pairs_fine_tune_from_xlnet_and_predict(kind, request, segabert_corpus, tmp_path):
    arch, options, pretrained = pretrained_kind(request, kind)
    glue = tmp_path / "RTE"
    _glue_pairs(glue)
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics",
                        save_dir=tmp_path / "ft",
                        extra=[*options, "--pretrain-data", segabert_corpus, "--glue-task", "RTE", "--restore-file",
                               pretrained, *RESET, "--batch-size", 8, "--max-update", 2, "--no-epoch-checkpoints",
                               "--log-format", "simple"])
    # <mask>, which fine-tuning appends to the pre-training dictionary, gets its rows from the model's initialisation
    assert "embed_tokens.weight: 1 row(s) appended for the fine-tuning symbols" in out
    assert "output_bias: 1 row(s) appended for the fine-tuning symbols" in out
    assert re.search(r"valid on 'valid' subset .*\| accuracy [0-9.]+", out), out[-2000:]
    predict_glue_pairs(tmp_path / "ft" / "checkpoint_last.pt", pretrained, "xlnet_plm", "indexed_sentence_prediction",
                       segabert_corpus, glue, tmp_path)


def test_a_checkpoint_of_other_relative_positions_is_refused(request, segabert_corpus, tmp_path):
    """The weights of a --positions token checkpoint fit a Segatron model (only R's split differs): refused."""
    arch, _, pretrained = pretrained_kind(request, "xlnet_token")
    glue = tmp_path / "RTE"
    _glue_pairs(glue)
    out = fairseq_train(glue, task="indexed_sentence_prediction", arch=arch, criterion="sentence_prediction_metrics",
                        save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--positions", "segatron", "--pretrain-data", segabert_corpus, "--glue-task", "RTE",
                               "--restore-file", pretrained, *RESET, "--batch-size", 8, "--max-update", 1])
    assert ("an XLNet checkpoint trained with relative positions 'token' (--positions, --segment-distance-origin); "
            "this model has 'segatron, query': give the checkpoint's") in out
