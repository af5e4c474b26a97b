"""The cloze two-tower pre-training yaml: the paper's base settings, and 2 updates at its shapes."""
import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli
from corpus import make_documents
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

CONFIG_DIR = str(ROOT / "segatron_fairseq" / "config")


def test_cloze_two_tower_base_yaml_carries_the_paper_settings():
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.dataclass.initialize import add_defaults

    import segatron_fairseq  # noqa: F401  (registers the task, model and criterion)
    from segatron_fairseq.models.cloze_two_tower import PRESETS

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name="cloze_two_tower_base", overrides=["task.data=/data"])
    cfg = OmegaConf.merge(OmegaConf.structured(FairseqConfig), cfg)
    add_defaults(cfg)
    for key, value in PRESETS["base"].items():
        assert cfg.model[key] == value, key
    assert (cfg.model.decoder_layers, cfg.model.decoder_embed_dim, cfg.model.decoder_ffn_embed_dim,
            cfg.model.decoder_attention_heads) == (6, 1024, 4096, 16)
    assert cfg.model.input_embedder == "token" and cfg.model.adaptive_softmax_cutoff is None  # BPE: full softmax
    assert cfg.model.combination_mask == "full" and cfg.model.token_positions == "absolute"
    assert (cfg.model.dropout, cfg.model.attention_dropout, cfg.model.activation_dropout) == (0.1, 0.1, 0.05)
    assert cfg.task._name == "cloze_lm" and cfg.task.tokens_per_sample == 512
    assert cfg.criterion._name == "cloze_lm" and cfg.criterion.cloze_loss == "cloze"
    assert cfg.optimizer._name == "nag" and cfg.optimizer.momentum == 0.99
    assert cfg.optimization.clip_norm == 0.1 and list(cfg.optimization.lr) == [1.0]
    schedule = cfg.lr_scheduler
    assert schedule._name == "cosine" and schedule.warmup_updates == 16000 and schedule.warmup_init_lr == 1e-7
    assert schedule.min_lr == 1e-4 and schedule.t_mult == 1
    # one cosine phase from the end of the warm-up to the last update
    assert schedule.lr_period_updates + schedule.warmup_updates == cfg.optimization.max_update == 600000
    assert cfg.common.fp16 and cfg.dataset.max_tokens == 2480
    # the large model as the yaml's comment writes it
    large = ["model._name=cloze_two_tower_large", "+model.decoder_layers=12", "+model.combine_query=concat",
             "optimization.max_update=1000000", "lr_scheduler.lr_period_updates=984000"]
    assert all(line in open(f"{CONFIG_DIR}/cloze_two_tower_base.yaml").read() for line in (" ".join(large[:3]),))
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name="cloze_two_tower_base", overrides=["task.data=/data", *large])
    cfg = OmegaConf.merge(OmegaConf.structured(FairseqConfig), cfg)
    add_defaults(cfg)
    for key, value in PRESETS["large"].items():
        assert cfg.model[key] == value, key
    assert cfg.lr_scheduler.lr_period_updates + cfg.lr_scheduler.warmup_updates == cfg.optimization.max_update


def _one_document(path, documents: int, seed: int) -> None:
    """Lines of ``documents`` generated documents with no blank line between them: one long document."""
    with open(path, "w", encoding="utf-8") as f:
        for doc in make_documents(documents, seed=seed):
            for _, sentences in doc:
                f.write(" ".join(w for s in sentences for w in s) + "\n")


@pytest.mark.end_to_end
def test_cloze_two_tower_base_yaml_pretrains_at_its_shapes(tmp_path):
    """The shipped yaml (6 blocks per tower, 16 heads, blocks of 512, 2480 tokens a batch, NAG, cosine), only
    the width narrowed: 1 update on CPU."""
    _one_document(tmp_path / "corpus.txt", 60, seed=4)
    _one_document(tmp_path / "valid.txt", 3, seed=5)
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
            "--validpref", tmp_path / "valid.txt", "--destdir", tmp_path / "bin")
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", "cloze_two_tower_base",
                  f"task.data={tmp_path / 'bin'}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=1", "+model.decoder_embed_dim=32",
                  "+model.decoder_ffn_embed_dim=64")
    assert "train: 23 blocks of up to 512 tokens from 1 documents" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 1
    model = state["cfg"]["model"]
    assert (model["decoder_layers"], model["decoder_attention_heads"], model["decoder_embed_dim"]) == (6, 16, 32)
    assert sum(k.startswith("network.forward_layers.") and k.endswith("fc1.weight") for k in state["model"]) == 6
    assert "| bsz 4 |" in out or "bsz=4" in out  # 4 blocks of 512 in 2480 tokens


GLUE_OVERRIDES = ["task.data=/glue/RTE", "task.glue_task=RTE", "task.pretrain_data=/corpus",
                  "checkpoint.restore_file=/ckpt.pt", "optimization.max_update=468"]


def test_cloze_two_tower_glue_yaml_carries_the_paper_settings():
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.dataclass.initialize import add_defaults

    import segatron_fairseq  # noqa: F401  (registers the task, model and criterion)

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name="cloze_two_tower_glue", overrides=GLUE_OVERRIDES)
        missing = compose(config_name="cloze_two_tower_glue")
    assert OmegaConf.is_missing(missing.optimization, "max_update")  # per task: no default schedule
    cfg = OmegaConf.merge(OmegaConf.structured(FairseqConfig), cfg)
    add_defaults(cfg)
    assert cfg.task._name == "cloze_sentence_prediction" and cfg.criterion._name == "sentence_prediction_metrics"
    assert cfg.dataset.batch_size == 16 and cfg.optimizer._name == "adam" and cfg.optimization.max_epoch == 3
    assert list(cfg.optimization.lr) == [5e-5]  # one of the paper's 1e-4, 5e-5, 3e-5
    schedule = cfg.lr_scheduler
    assert schedule._name == "cosine_warmup_fraction" and schedule.warmup_fraction == 0.1
    assert schedule.warmup_init_lr == 1e-7 and schedule.min_lr == 1e-6 and schedule.warmup_updates == 0
    # RTE: 2,490 examples -> 156 batches of 16 an epoch, 468 updates in 3 epochs (the scheduler warms up over 47)
    assert cfg.optimization.max_update == 3 * -(-2490 // 16)
    assert (cfg.model.dropout, cfg.model.attention_dropout, cfg.model.activation_dropout) == (0.0, 0.0, 0.0)
    assert cfg.model.classifier_dropout == 0.1 and cfg.model._name == "cloze_two_tower_large"
    from segatron_fairseq.models.cloze_two_tower import PRESETS
    for key, value in PRESETS["large"].items():
        assert cfg.model[key] == value, key
    assert cfg.checkpoint.best_checkpoint_metric == "accuracy" and cfg.checkpoint.maximize_best_checkpoint_metric


@pytest.mark.end_to_end
def test_cloze_two_tower_glue_yaml_fine_tunes_at_its_shapes(cloze_trained, tmp_path):
    """The shipped GLUE yaml (the large model's 12 blocks per tower and 16 heads, batch 16, cosine), only the
    width narrowed: 2 updates on CPU (from scratch: restoring a cloze_lm checkpoint is tested in
    tests/tasks/test_cloze_finetune.py)."""
    corpus = cloze_trained / "bin"
    narrow = {"decoder_embed_dim": 32, "decoder_ffn_embed_dim": 64}
    glue = tmp_path / "RTE"
    glue.mkdir()
    rows = "".join(f"{k}\tThe lobster lives in deep water .\tIt grows .\t{('entailment', 'not_entailment')[k % 2]}\n"
                   for k in range(40))
    for name in ("train.tsv", "dev.tsv"):
        (glue / name).write_text("index\tsentence1\tsentence2\tlabel\n" + rows)
    overrides = [o for o in GLUE_OVERRIDES if not o.startswith(("task.data", "task.pretrain", "checkpoint.restore",
                                                                 "optimization.max_update"))]
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", "cloze_two_tower_glue",
                  f"task.data={glue}", f"task.pretrain_data={corpus}",
                  f"checkpoint.restore_file={tmp_path / 'none.pt'}",
                  f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"common.user_dir={PLUGIN_DIR}",
                  f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true", "common.fp16=false",
                  "optimization.max_update=2", "common.log_interval=1", *overrides,
                  *[f"model.{k}={v}" for k, v in narrow.items()])
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    model = state["cfg"]["model"]
    assert (model["decoder_layers"], model["decoder_attention_heads"], model["combine_query"]) == (12, 16, "concat")
    head = state["model"]["classification_heads.sentence_classification_head.out_proj.weight"]
    assert head.shape == (2, 3 * 32)  # the two <s> and the <sep> of a pair
    assert "| bsz 16 |" in out or "bsz=16" in out
    assert "warm-up over 0 of 2 updates, then cosine to 1e-06" in out
