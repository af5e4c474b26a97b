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


def _one_document(path, documents: int, seed: int) -> None:
    """Lines of ``documents`` generated documents with no blank line between them: one long document."""
    with open(path, "w", encoding="utf-8") as f:
        for doc in make_documents(documents, seed=seed):
            for _, sentences in doc:
                f.write(" ".join(w for s in sentences for w in s) + "\n")


@pytest.mark.end_to_end
def test_cloze_two_tower_base_yaml_pretrains_at_its_shapes(tmp_path):
    """The shipped yaml (6 blocks per tower, 16 heads, blocks of 512, 2480 tokens a batch, NAG, cosine), only
    the width narrowed: 2 updates on CPU."""
    _one_document(tmp_path / "corpus.txt", 60, seed=4)
    _one_document(tmp_path / "valid.txt", 3, seed=5)
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
            "--validpref", tmp_path / "valid.txt", "--destdir", tmp_path / "bin")
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", "cloze_two_tower_base",
                  f"task.data={tmp_path / 'bin'}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=2", "+model.decoder_embed_dim=32",
                  "+model.decoder_ffn_embed_dim=64")
    assert "train: 23 blocks of up to 512 tokens from 1 documents" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    model = state["cfg"]["model"]
    assert (model["decoder_layers"], model["decoder_attention_heads"], model["decoder_embed_dim"]) == (6, 16, 32)
    assert sum(k.startswith("network.forward_layers.") and k.endswith("fc1.weight") for k in state["model"]) == 6
    assert "| bsz 4 |" in out or "bsz=4" in out  # 4 blocks of 512 in 2480 tokens
