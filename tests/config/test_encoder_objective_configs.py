"""The encoder pre-training objectives' yamls (SpanBERT, ALBERT, ELECTRA): each composes with its paper's settings,
and each trains at its shapes (the shipped task and dataset settings, only the model narrowed as the fine-tuning yamls'
NARROW) for 2 updates on CPU. Every shipped yaml is named in some test."""
import ast
import re

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, binarized_wikitext, run_cli
from hydra import compose, initialize_config_dir
from test_finetuning_configs import NARROW

CONFIG_DIR = ROOT / "segatron_fairseq" / "config"
# (yaml, architecture, criterion, the paper's settings: dotted key -> value)
SPANBERT = {"task.tokens_per_sample": 512, "task.mask_prob": 0.15, "task.leave_unmasked_prob": 0.1,
            "task.random_token_prob": 0.1, "task.mask_span": "span", "task.span_geometric_p": 0.2,
            "task.max_span_length": 10, "task.span_boundary_objective": True, "optimization.lr": [0.0001],
            "optimizer.adam_betas": "(0.9,0.999)", "optimizer.adam_eps": 1e-08, "optimizer.weight_decay": 0.01,
            "lr_scheduler._name": "polynomial_decay", "lr_scheduler.warmup_updates": 10000,
            "lr_scheduler.total_num_update": 2400000, "lr_scheduler.power": 1.0,
            "lr_scheduler.end_learning_rate": 0.0, "optimization.max_update": 2400000,
            "optimization.clip_norm": 1.0, "common.fp16": True}
# ALBERT's recipe: MLM + SOP, batch 4096 x 512 tokens, LAMB lr 0.00176, 3125 warm-up steps, 125K steps
ALBERT = {"task.tokens_per_sample": 512, "task.mask_prob": 0.15, "task.sentence_order_prediction": True,
          "optimizer._name": "torch_lamb", "optimization.lr": [0.00176], "optimizer.weight_decay": 0.01,
          "lr_scheduler._name": "polynomial_decay", "lr_scheduler.warmup_updates": 3125,
          "lr_scheduler.total_num_update": 125000, "lr_scheduler.power": 1.0, "lr_scheduler.end_learning_rate": 0.0,
          "optimization.max_update": 125000, "optimization.clip_norm": 1.0, "common.fp16": True,
          "common.fp16_no_flatten_grads": True}
OBJECTIVE_YAMLS = [("spanbert_base", "segabert_base", "span_boundary_mlm", SPANBERT),
                   ("spanbert_bert_base", "segabert_bert_base", "span_boundary_mlm", SPANBERT),
                   ("albert_base", "segabert_albert_base", "masked_lm_sop", ALBERT),
                   ("albert_bert_base", "albert_base", "masked_lm_sop", ALBERT)]
SPANBERT_YAMLS = [config for config in OBJECTIVE_YAMLS if config[0].startswith("spanbert_")]
ALBERT_YAMLS = [config for config in OBJECTIVE_YAMLS if config[0].startswith("albert_")]
# the GPUs each yaml's comment counts
GPUS = {"spanbert_base": 8, "spanbert_bert_base": 8, "albert_base": 8, "albert_bert_base": 8}
TOKENS_PER_UPDATE = {"spanbert_base": 256 * 512, "spanbert_bert_base": 256 * 512, "albert_base": 4096 * 512,
                     "albert_bert_base": 4096 * 512}


def test_every_shipped_yaml_is_tested():
    """Each yaml of segatron_fairseq/config is named (a string of its own) in some test file."""
    named = {node.value for path in (ROOT / "tests").rglob("test_*.py")
             for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Constant)}
    assert sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem not in named) == []


@pytest.mark.parametrize("name,arch,criterion,settings", OBJECTIVE_YAMLS, ids=[c[0] for c in OBJECTIVE_YAMLS])
def test_objective_yamls_carry_the_paper_settings(name, arch, criterion, settings):
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    assert cfg.model._name == arch and cfg.criterion == criterion
    for key, value in settings.items():
        found = OmegaConf.select(cfg, key)
        assert (list(found) if OmegaConf.is_list(found) else found) == value, key
    tokens = cfg.task.tokens_per_sample * cfg.dataset.batch_size * cfg.optimization.update_freq[0] * GPUS[name]
    assert tokens == TOKENS_PER_UPDATE[name]


@pytest.fixture(scope="module")
def corpus_137k(tmp_path_factory):
    """About 137k tokens of generated WikiText: some 270 examples of 512 tokens, 4 batches of 64 and a short one."""
    return binarized_wikitext(tmp_path_factory.mktemp("corpus_137k"), 700, 10, seed=3) / "bin"


@pytest.fixture(scope="module")
def corpus_of_one_albert_batch(tmp_path_factory):
    """About 40k tokens of generated WikiText: a little more than ALBERT's batch of 64 examples of 512 tokens, so
    each of its updates (update_freq 8) reads one full batch and a short one, then its epoch ends."""
    return binarized_wikitext(tmp_path_factory.mktemp("corpus_of_one_albert_batch"), 210, 10, seed=3) / "bin"


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch,criterion,settings", SPANBERT_YAMLS, ids=[c[0] for c in SPANBERT_YAMLS])
def test_objective_yamls_train_at_their_shapes(name, arch, criterion, settings, corpus_137k, tmp_path):
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name, f"task.data={corpus_137k}",
                  f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"common.user_dir={PLUGIN_DIR}",
                  f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true", "common.fp16=false",
                  "optimization.max_update=1", "common.log_interval=1",
                  *[f"+model.{key}={value}" for key, value in NARROW.items()])
    assert "done training" in out
    first = int(re.search(r"bsz=([0-9.]+), num_updates=1,", out).group(1))
    assert first == 32  # the shipped batch of 512-token examples
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 1
    assert state["cfg"]["task"]["tokens_per_sample"] == 512 and state["cfg"]["criterion"]["_name"] == criterion
    if settings.get("task.span_boundary_objective"):
        assert "task_heads.span_boundary.bias" in state["model"]
        assert re.search(r"mlm_ppl=[0-9.]+, sbo_ppl=[0-9.]+", out)


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch,criterion,settings", ALBERT_YAMLS, ids=[c[0] for c in ALBERT_YAMLS])
def test_albert_yamls_train_at_their_shapes(name, arch, criterion, settings, corpus_of_one_albert_batch, tmp_path):
    """Each ALBERT yaml as shipped (64 sequences of 512 tokens a batch, update_freq 8, SOP, torch_lamb), only the
    width narrowed (the 12 shared layers kept, E 16): 1 update on CPU (the corpus's epoch, one full batch and a
    short one, makes each update's group of batches end early)."""
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name,
                  f"task.data={corpus_of_one_albert_batch}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=1", "+model.encoder_embed_dim=32",
                  "+model.encoder_ffn_embed_dim=64", "+model.encoder_attention_heads=1",
                  "+model.factorized_embed_dim=16")
    assert "done training" in out and "sop_accuracy" in out
    first = int(re.search(r"\| bsz ([0-9.]+) \| num_updates 1 \|", out).group(1))
    assert 64 < first < 128, first  # a full batch of 64 and a short one
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]
    assert state["optimizer_history"][-1]["num_updates"] == 1 and cfg["criterion"]["_name"] == criterion
    assert cfg["dataset"]["batch_size"] == 64 and cfg["task"]["tokens_per_sample"] == 512
    assert cfg["model"]["share_encoder_layers"] == "all" and cfg["model"]["encoder_layers"] == 12
    assert "encoder.sentence_encoder.layers.0.fc1.weight" in state["model"]
    assert "encoder.sentence_encoder.layers.1.fc1.weight" not in state["model"]
    assert "classification_heads.sentence_order.out_proj.weight" in state["model"]
    assert ("encoder.segment_embeddings.paragraph.weight" in state["model"]) == (name == "albert_base")


# ELECTRA's yamls: (config name, architecture, its settings as dotted keys)
ELECTRA_YAMLS = [
    ("electra_small", "segabert_electra_small", "electra_small"),
    ("electra_bert_small", "electra_small", "electra_small"),
    ("electra_base", "segabert_electra_base", "electra_base"),
    ("electra_bert_base", "electra_base", "electra_base"),
]
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
# only the width narrowed: ELECTRA's 12 layers, E and generator fraction as shipped
ELECTRA_NARROW = {"encoder_embed_dim": 32, "encoder_ffn_embed_dim": 64, "encoder_attention_heads": 1}


def _compose(name):
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    return cfg, OmegaConf


@pytest.mark.parametrize("name,arch,settings", ELECTRA_YAMLS)
def test_electra_yamls_carry_their_paper_settings(name, arch, settings):
    cfg, omegaconf = _compose(name)
    assert cfg.model._name == arch
    for key, value in SETTINGS[settings].items():
        found = omegaconf.select(cfg, key)
        assert (list(found) if isinstance(value, list) else found) == value, key
    gpus, sequences = BATCH[settings]
    assert gpus * cfg.dataset.batch_size * cfg.optimization.update_freq[0] == sequences
    assert f"{gpus} GPU" in (ROOT / "segatron_fairseq" / "config" / f"{name}.yaml").read_text()


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch,settings", ELECTRA_YAMLS)
def test_electra_yamls_train_at_their_shapes(name, arch, settings, corpus_137k, tmp_path):
    """Each yaml as shipped (its batch, example length, 12 layers, E, generator fraction), only the width narrowed."""
    out = run_cli("fairseq-hydra-train", "--config-dir", str(CONFIG_DIR), "--config-name", name,
                  f"task.data={corpus_137k}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=1",
                  *[f"+model.{key}={value}" for key, value in ELECTRA_NARROW.items()])
    assert "done training" in out and "rtd_accuracy" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]
    assert state["optimizer_history"][-1]["num_updates"] == 1
    assert cfg["dataset"]["batch_size"] == (128 if settings == "electra_small" else 32)
    assert cfg["task"]["tokens_per_sample"] == SETTINGS[settings]["task.tokens_per_sample"]
    model = state["model"]
    assert sum(k.startswith("encoder.sentence_encoder.layers.") and k.endswith("fc1.weight") for k in model) == 12
    e = 128 if settings == "electra_small" else 768
    assert model["encoder.sentence_encoder.embed_tokens.weight"].shape[1] == e
    generator_width = round(32 * (0.25 if settings == "electra_small" else 1 / 3))
    assert model["generator.sentence_encoder.layers.0.fc1.weight"].shape == (4 * generator_width, generator_width)
    assert ("encoder.segment_embeddings.token.weight" in model) == arch.startswith("segabert_")
