"""The fine-tuning yamls (SQuAD, S-SegaBERT, NER) at their shapes: the shipped task and dataset settings
(windows of 384 every 128, batch 32 windows; pairs of sentences of up to 512, batch 16; documents in windows of
512, batch 8, the biLSTM-CRF head), only the model narrowed, 2 updates on CPU from a pre-trained checkpoint of the
same narrowed architecture."""
import json
import random
import re

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, fairseq_train, run_cli
from corpus import make_documents, sentence, write_lines

CONFIG_DIR = str(ROOT / "segatron_fairseq" / "config")
NARROW = {"encoder_embed_dim": 32, "encoder_ffn_embed_dim": 64, "encoder_layers": 1, "encoder_attention_heads": 2}


def _pretrained(tmp_path, arch):
    write_lines(tmp_path / "corpus.txt", make_documents(60, seed=2))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
            "--validpref", tmp_path / "corpus.txt", "--destdir", tmp_path / "bin")
    narrow = [x for name, value in NARROW.items() for x in (f"--{name.replace('_', '-')}", value)]
    fairseq_train(tmp_path / "bin", task="segabert_mlm", arch=arch, criterion="masked_lm",
                  save_dir=tmp_path / "pretrained", extra=[*narrow, "--max-positions", 512, "--tokens-per-sample", 64,
                                                          "--batch-size", 4, "--max-update", 1,
                                                          "--no-epoch-checkpoints", "--disable-validation"])
    return tmp_path / "bin", tmp_path / "pretrained" / "checkpoint_last.pt"


def _hydra(config, tmp_path, *overrides):
    return run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", config,
                   f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"common.user_dir={PLUGIN_DIR}",
                   f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true", "common.fp16=false",
                   "optimization.max_update=2", "common.log_interval=1",
                   *[f"+model.{name}={value}" for name, value in NARROW.items()], *overrides)


def _squad_file(path, rng, contexts):
    articles = []
    for c in range(contexts):
        words = [w for _ in range(60) for w in sentence(rng)]  # about 500 tokens: several 384-token windows
        context = " ".join(words)
        qas = []
        for q in range(4):
            start = rng.randrange(0, len(words) - 3)
            answer = " ".join(words[start:start + 2])
            offset = len(" ".join(words[:start])) + (1 if start else 0)
            qas.append({"id": f"{c}-{q}", "question": f"What follows {words[start - 1] if start else 'nothing'} ?",
                        "answers": [{"text": answer, "answer_start": offset}]})
        articles.append({"title": str(c), "paragraphs": [{"context": context, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": articles}))


@pytest.mark.end_to_end
def test_squad_yaml_trains_at_its_shapes(tmp_path):
    corpus, checkpoint = _pretrained(tmp_path, "segabert_base")
    squad = tmp_path / "squad"
    squad.mkdir()
    rng = random.Random(0)
    _squad_file(squad / "train-v1.1.json", rng, 12)  # 48 questions, about 150 windows
    _squad_file(squad / "dev-v1.1.json", rng, 2)
    out = _hydra("segabert_squad", tmp_path, f"task.data={squad}", f"task.pretrain_data={corpus}",
                 f"checkpoint.restore_file={checkpoint}")
    assert "Loaded checkpoint" in out and "done training" in out
    first = int(re.search(r"bsz=([0-9]+), num_updates=1,", out).group(1))
    assert 96 < first <= 128  # update_freq 4 x batches of at most 32 windows of up to 384 tokens, as shipped
    assert "valid on 'valid' subset" in out and " exact " in out and " f1 " in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["cfg"]["task"]["max_positions"] == 384 and state["cfg"]["task"]["doc_stride"] == 128
    assert state["optimizer_history"][-1]["num_updates"] == 2


@pytest.mark.end_to_end
def test_s_segabert_nli_yaml_trains_at_its_shapes(tmp_path):
    corpus, checkpoint = _pretrained(tmp_path, "segabert_large")
    nli = tmp_path / "nli"
    nli.mkdir()
    rng = random.Random(1)
    labels = ["contradiction", "entailment", "neutral"]
    for name, n in (("train.tsv", 40), ("dev.tsv", 8)):
        (nli / name).write_text("".join(f"{' '.join(sentence(rng))}\t{' '.join(sentence(rng))}\t{rng.choice(labels)}\n"
                                        for _ in range(n)))
    out = _hydra("s_segabert_nli", tmp_path, f"task.data={nli}", f"task.pretrain_data={corpus}",
                 f"checkpoint.restore_file={checkpoint}")
    assert "Loaded checkpoint" in out and "done training" in out and "bsz=16," in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["cfg"]["task"]["pooling"] == "mean"
    assert state["model"]["task_heads.siamese_nli_head.out_proj.weight"].shape == (3, 3 * 32)


def _ner_file(path, rng, documents):
    """CoNLL documents of 40 generated sentences (several 512-token windows each); capitalised words are B-PER."""
    lines = []
    for _ in range(documents):
        lines += ["-DOCSTART- -X- -X- O", ""]
        for _ in range(40):
            lines += [f"{w} NN O {'B-PER' if w[:1].isupper() else 'O'}" for w in sentence(rng)] + [""]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.end_to_end
def test_ner_yaml_trains_at_its_shapes(tmp_path):
    corpus, checkpoint = _pretrained(tmp_path, "segabert_base")
    ner = tmp_path / "ner"
    ner.mkdir()
    rng = random.Random(2)
    _ner_file(ner / "train.txt", rng, 8)
    _ner_file(ner / "valid.txt", rng, 1)
    out = _hydra("segabert_ner", tmp_path, f"task.data={ner}", f"task.pretrain_data={corpus}",
                 f"checkpoint.restore_file={checkpoint}")
    assert "Loaded checkpoint" in out and "done training" in out and "bsz=8," in out
    assert re.search(r"valid on 'valid' subset .*\| f1 [0-9.]+", out), out[-2000:]
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["cfg"]["task"]["max_positions"] == 512 and state["cfg"]["task"]["token_head"] == "bilstm_crf"
    assert state["model"]["task_heads.token_labelling_head.crf.transitions"].shape == (9, 9)
    groups = state["last_optimizer_state"]
    encoder_lr, head_lr = (groups[name]["param_groups"][0]["lr"] for name in ("default", "head"))
    assert head_lr == pytest.approx(100 * encoder_lr) and encoder_lr == pytest.approx(1e-5 * 2 / 140)
    assert state["optimizer_history"][-1]["num_updates"] == 2


@pytest.mark.parametrize("name", ["segabert_squad", "s_segabert_nli", "segabert_ner"])
def test_finetuning_yamls_carry_the_paper_settings(name):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/d", "task.pretrain_data=/p",
                                                   "checkpoint.restore_file=/c"])
    if name == "segabert_squad":  # 4 epochs, batch 128, lr 3e-5
        assert cfg.optimization.max_epoch == 4 and list(cfg.optimization.lr) == [3e-05]
        assert cfg.dataset.batch_size * cfg.optimization.update_freq[0] == 128
    elif name == "segabert_ner":  # the cloze paper's head and learning rates: 1e-3 head, 1e-5 encoder
        assert cfg.task.token_head == "bilstm_crf" and cfg.optimizer._name == "composite"
        assert cfg.optimizer.groups.head.lr_float == 1e-3 and cfg.optimizer.groups.default.lr_float == 1e-5
        for group in cfg.optimizer.groups.values():
            assert group.lr_scheduler.warmup_updates == round(0.1 * group.lr_scheduler.total_num_update)
    else:  # Sentence-BERT: batch 16, lr 2e-5, one epoch, 10% warm-up, mean pooling
        assert cfg.optimization.max_epoch == 1 and list(cfg.optimization.lr) == [2e-05]
        assert cfg.dataset.batch_size == 16 and cfg.task.pooling == "mean"
        assert cfg.lr_scheduler.warmup_updates == round(0.1 * cfg.lr_scheduler.total_num_update)
