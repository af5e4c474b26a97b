"""Fine-tuning the cloze two-tower model from a tiny cloze_lm checkpoint: the paper's GLUE layout, a GLUE run
through segatron-predict glue, and NER through token_labelling and segatron-predict ner."""
import random
import re

import torch
from conftest import fairseq_train, run_cli
from glue_pairs import predict_glue_pairs, write_glue_pairs
from test_token_labelling import write_ner_file

from segatron_fairseq.modules.backward_tower_indexes import backward_tower_indexes
from segatron_fairseq.segments import SEP_SYMBOL
from segatron_fairseq.tasks.cloze_sentence_prediction import ClozeSentencePredictionConfig, ClozeSentencePredictionTask

RESET = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler"]
WORDS = "The lobster lives grows in deep water near the coast of Norway on rocky ground".split()


def test_examples_are_laid_out_as_the_paper(cloze_trained, tmp_path):
    cfg = ClozeSentencePredictionConfig(data=str(tmp_path), pretrain_data=str(cloze_trained / "bin"),
                                        glue_task="RTE", regression_target=False, max_positions=9)
    task = ClozeSentencePredictionTask.setup_task(cfg)
    d = task.dictionary
    assert d[len(d) - 1] == SEP_SYMBOL and task.boundaries == 3
    dataset = task.examples_dataset([["The lobster lives", "in deep <sep> water"], ["The lobster lives"]], [0, 1])
    pair, single = (dataset.examples[k] for k in (0, 1))
    ids = [d.index(w) for w in "The lobster lives in deep".split()]
    tokens, paragraph, sentence, token = pair
    # <s> a <sep> b <s>; a literal <sep> in a text is <unk>; the longest text loses its end to fit 9 positions
    assert tokens == [d.bos(), *ids[:3], d.index(SEP_SYMBOL), *ids[3:], d.unk(), d.bos()]
    assert paragraph == [0, 0, 0, 0, 0, 1, 1, 1, 1] and sentence == [0] * 9
    assert token == [0, 0, 1, 2, 2, 0, 1, 2, 2]
    assert single[0] == [d.bos(), *ids[:3], d.bos()]
    # a model with segment positions: its backward tower reads text b as the paragraph after text a
    backward = backward_tower_indexes({name: torch.tensor([values]) for name, values in
                                       zip(("paragraph", "sentence", "token"), (paragraph, sentence, token))}, None)
    assert backward["paragraph"].tolist() == [[1, 1, 1, 1, 0, 0, 0, 0, 0]]
    assert backward["sentence"].tolist() == [[0] * 9]
    assert backward["token"].tolist() == [[2, 1, 0, 0, 2, 1, 0, 0, 0]]


def test_glue_pairs_fine_tune_from_cloze_lm_and_predict(cloze_trained, segabert_corpus, tmp_path):
    rng = random.Random(4)
    rows = [(" ".join(rng.choices(WORDS, k=5)), " ".join(rng.choices(WORDS, k=4)),
             rng.choice(["entailment", "not_entailment"])) for _ in range(24)]
    glue = tmp_path / "RTE"
    write_glue_pairs(glue, rows)
    pretrained, corpus = cloze_trained / "ckpt" / "checkpoint_last.pt", cloze_trained / "bin"
    out = fairseq_train(glue, task="cloze_sentence_prediction", arch="cloze_two_tower_tiny",
                        criterion="sentence_prediction_metrics", save_dir=tmp_path / "ft",
                        extra=["--pretrain-data", corpus, "--glue-task", "RTE", "--restore-file", pretrained, *RESET,
                               "--batch-size", 8, "--max-update", 2, "--no-epoch-checkpoints", "--dropout", 0,
                               "--attention-dropout", 0, "--activation-dropout", 0, "--log-format", "simple"])
    assert "network.embed_tokens.weight: 1 row(s) appended for the fine-tuning symbols" in out
    assert re.search(r"valid on 'valid' subset .*\| accuracy [0-9.]+", out), out[-2000:]
    predict_glue_pairs(tmp_path / "ft" / "checkpoint_last.pt", pretrained, "cloze_lm", "cloze_sentence_prediction",
                       corpus, glue, tmp_path)
    squad = run_cli("segatron-predict", "squad", "--checkpoint", pretrained, "--pretrain-data", corpus, "--input",
                    glue / "dev.tsv", "--out", tmp_path / "other" / "answers.json", "--cpu", expect_ok=False)
    assert squad.strip().splitlines()[-1] == (f"segatron-predict: error: {pretrained}: a cloze_two_tower checkpoint; "
                                              f"segatron-predict squad serves segabert and xlnet checkpoints")
    other_corpus = run_cli("segatron-predict", "glue", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                           "--pretrain-data", segabert_corpus, "--glue-task", "RTE", "--data", glue,
                           "--out", tmp_path / "other", "--cpu", expect_ok=False)
    assert "symbols (with <sep>) but" in other_corpus and "--pretrain-data is not the corpus this model was " \
        "trained on" in other_corpus
    assert not (tmp_path / "other").exists()


def test_ner_fine_tunes_the_cloze_model_and_predicts(cloze_trained, tmp_path):
    """The paper's biLSTM-CRF head (the linear head on the same features: test_cloze_two_tower_finetuning.py)."""
    from segatron_fairseq.data.conll import read_conll
    from segatron_fairseq.hub.checkpoints import load_checkpoint

    corpus, pretrained = cloze_trained / "bin", cloze_trained / "ckpt" / "checkpoint_last.pt"
    (tmp_path / "ner").mkdir()
    write_ner_file(tmp_path / "ner" / "train.txt", 4, seed=1)
    write_ner_file(tmp_path / "ner" / "valid.txt", 2, seed=2)
    out = fairseq_train(tmp_path / "ner", task="token_labelling", arch="cloze_two_tower_tiny",
                        criterion="token_labelling", save_dir=tmp_path / "ft",
                        extra=["--pretrain-data", corpus, "--restore-file", pretrained,
                               *RESET, "--token-head", "bilstm_crf", "--max-positions", 32, "--batch-size", 4,
                               "--max-update", 2, "--no-epoch-checkpoints", "--disable-validation"])
    assert "network.embed_tokens.weight: 1 row(s) appended for the fine-tuning symbols" in out  # <mask>
    checkpoint = tmp_path / "ft" / "checkpoint_last.pt"
    predicted = run_cli("segatron-predict", "ner", "--checkpoint", checkpoint, "--pretrain-data", corpus,
                        "--input", tmp_path / "ner" / "valid.txt", "--out", tmp_path / "valid.predicted", "--cpu")
    assert re.search(r"f1 [0-9.]+ \| precision [0-9.]+ \| recall [0-9.]+ \| sentences 6", predicted)
    assert len((tmp_path / "valid.predicted").read_text().splitlines()) == \
        len((tmp_path / "ner" / "valid.txt").read_text().splitlines())
    # the windows the cloze model reads are <s> ... <s>, as its pre-training blocks
    loaded = load_checkpoint(str(checkpoint), "cloze_two_tower", str(corpus))
    windows = loaded.task.windows_dataset(read_conll(str(tmp_path / "ner" / "valid.txt")))
    bos = loaded.task.dictionary.bos()
    assert all(w.tokens[0] == bos and w.tokens[-1] == bos for w in windows.windows)
