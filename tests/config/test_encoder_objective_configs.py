"""The encoder pre-training objectives' yamls (SpanBERT, ...): each composes with its paper's settings, and each
trains at its shapes (the shipped task and dataset settings, only the model narrowed as the fine-tuning yamls'
NARROW) for 2 updates on CPU. Every shipped yaml is named in some test."""
import ast
import re

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli
from corpus import make_documents, write_lines
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
OBJECTIVE_YAMLS = [("spanbert_base", "segabert_base", "span_boundary_mlm", SPANBERT),
                   ("spanbert_bert_base", "segabert_bert_base", "span_boundary_mlm", SPANBERT)]
GPUS = {"spanbert_base": 8, "spanbert_bert_base": 8}  # the GPUs each yaml's comment counts
TOKENS_PER_UPDATE = {"spanbert_base": 256 * 512, "spanbert_bert_base": 256 * 512}


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
def corpus(tmp_path_factory):
    """About 40 examples of 512 tokens: two updates of 32."""
    tmp = tmp_path_factory.mktemp("objective_corpus")
    write_lines(tmp / "corpus.txt", make_documents(260, seed=4))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "corpus.txt", "--destdir", tmp / "bin")
    return tmp / "bin"


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch,criterion,settings", OBJECTIVE_YAMLS, ids=[c[0] for c in OBJECTIVE_YAMLS])
def test_objective_yamls_train_at_their_shapes(name, arch, criterion, settings, corpus, tmp_path):
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name, f"task.data={corpus}",
                  f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"common.user_dir={PLUGIN_DIR}",
                  f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true", "common.fp16=false",
                  "optimization.max_update=2", "common.log_interval=1",
                  *[f"+model.{key}={value}" for key, value in NARROW.items()])
    assert "done training" in out
    first = int(re.search(r"bsz=([0-9.]+), num_updates=1,", out).group(1))
    assert first == 32  # the shipped batch of 512-token examples
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert state["cfg"]["task"]["tokens_per_sample"] == 512 and state["cfg"]["criterion"]["_name"] == criterion
    if settings.get("task.span_boundary_objective"):
        assert "classification_heads.span_boundary.bias" in state["model"]
        assert re.search(r"mlm_ppl=[0-9.]+, sbo_ppl=[0-9.]+", out)
