"""The encoder objectives' hydra yamls (issue 30): each composes with its paper's settings, and trains at its shapes
with only the width narrowed (2 updates on CPU)."""
import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli
from corpus import make_documents, write_lines
from hydra import compose, initialize_config_dir

# every objective yaml: (config name, architecture, its settings as dotted keys)
OBJECTIVE_YAMLS = [
    ("electra_small", "segabert_electra_small", "electra_small"),
    ("electra_bert_small", "segabert_bert_electra_small", "electra_small"),
    ("electra_base", "segabert_electra_base", "electra_base"),
    ("electra_bert_base", "segabert_bert_electra_base", "electra_base"),
]
CONFIG_DIR = str(ROOT / "segatron_fairseq" / "config")
# ELECTRA's configure_pretraining.py; the base run's 766K updates are the paper's
_ELECTRA = {"task._name": "segabert_mlm", "criterion._name": "electra", "criterion.rtd_weight": 50.0,
            "task.mask_prob": 0.15, "task.leave_unmasked_prob": 0.15, "task.random_token_prob": 0.0,
            "optimizer._name": "adam", "optimizer.adam_eps": 1e-6, "optimizer.weight_decay": 0.01,
            "optimizer.adam_betas": "(0.9,0.999)", "lr_scheduler._name": "polynomial_decay",
            "lr_scheduler.warmup_updates": 10000, "lr_scheduler.power": 1.0, "lr_scheduler.end_learning_rate": 0.0,
            "optimization.clip_norm": 1.0, "model.max_positions": 512}
SETTINGS = {
    "electra_small": {**_ELECTRA, "task.tokens_per_sample": 128, "optimization.lr": [0.0005],
                      "optimization.max_update": 1000000, "lr_scheduler.total_num_update": 1000000},
    "electra_base": {**_ELECTRA, "task.tokens_per_sample": 512, "optimization.lr": [0.0002],
                     "optimization.max_update": 766000, "lr_scheduler.total_num_update": 766000},
}
BATCH = {"electra_small": (1, 128), "electra_base": (8, 256)}  # the yamls' comments: GPUs, sequences per update
NARROW = {"encoder_embed_dim": 32, "encoder_ffn_embed_dim": 64, "encoder_attention_heads": 2}


def _compose(name):
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    return cfg, OmegaConf


@pytest.mark.parametrize("name,arch,settings", OBJECTIVE_YAMLS)
def test_objective_yamls_carry_their_paper_settings(name, arch, settings):
    cfg, omegaconf = _compose(name)
    assert cfg.model._name == arch
    for key, value in SETTINGS[settings].items():
        found = omegaconf.select(cfg, key)
        assert (list(found) if isinstance(value, list) else found) == value, key
    gpus, sequences = BATCH[settings]
    assert gpus * cfg.dataset.batch_size * cfg.optimization.update_freq[0] == sequences
    assert f"{gpus} GPU" in (ROOT / "segatron_fairseq" / "config" / f"{name}.yaml").read_text()


def test_every_objective_yaml_is_tested():
    shipped = sorted(p.stem for p in (ROOT / "segatron_fairseq" / "config").glob("electra*.yaml"))
    assert shipped == sorted(name for name, _, _ in OBJECTIVE_YAMLS if name.startswith("electra"))


@pytest.fixture(scope="module")
def objective_corpus(tmp_path_factory):
    """About 137k tokens: two updates of 128 x 128 or 32 x 512 tokens."""
    tmp = tmp_path_factory.mktemp("objective_corpus")
    write_lines(tmp / "corpus.txt", make_documents(700, seed=3))
    write_lines(tmp / "valid.txt", make_documents(4, seed=4))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "valid.txt", "--destdir", tmp / "bin")
    return tmp / "bin"


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch,settings", OBJECTIVE_YAMLS)
def test_objective_yamls_train_at_their_shapes(name, arch, settings, objective_corpus, tmp_path):
    """Each yaml as shipped (its batch, example length, 12 layers, E, generator fraction), only the width narrowed."""
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name,
                  f"task.data={objective_corpus}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=2",
                  *[f"+model.{key}={value}" for key, value in NARROW.items()])
    assert "done training" in out and "rtd_accuracy" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert cfg["dataset"]["batch_size"] == (128 if settings == "electra_small" else 32)
    assert cfg["task"]["tokens_per_sample"] == SETTINGS[settings]["task.tokens_per_sample"]
    model = state["model"]
    assert sum(k.startswith("encoder.sentence_encoder.layers.") and k.endswith("fc1.weight") for k in model) == 12
    e = 128 if settings == "electra_small" else 768
    assert model["encoder.sentence_encoder.embed_tokens.weight"].shape[1] == e
    generator_width = round(32 * (0.25 if settings == "electra_small" else 1 / 3))
    assert model["generator.sentence_encoder.layers.0.fc1.weight"].shape == (4 * generator_width, generator_width)
    assert ("encoder.segment_embeddings.token.weight" in model) == (not arch.startswith("segabert_bert_"))
