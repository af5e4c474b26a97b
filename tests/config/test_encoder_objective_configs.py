"""The hydra yamls of the encoder objectives of issue 30 (SpanBERT, ALBERT, ELECTRA): each composes with its
paper's settings and trains at its shapes, only the model narrowed, 2 updates on CPU."""
import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli
from corpus import make_documents, write_wikitext
from hydra import compose, initialize_config_dir

CONFIG_DIR = str(ROOT / "segatron_fairseq" / "config")
# every shipped yaml of these objectives: (config name, architecture)
OBJECTIVE_YAMLS = [("albert_base", "segabert_albert_base"), ("albert_bert_base", "segabert_bert_albert_base")]
ALBERT_YAMLS = [config for config in OBJECTIVE_YAMLS if config[0].startswith("albert_")]


@pytest.mark.parametrize("name,arch", ALBERT_YAMLS)
def test_albert_configs_carry_the_paper_settings(name, arch):
    """ALBERT's recipe: MLM + SOP on 512-token sequences, batch 4096 (64 per GPU x update_freq 8 x the comment's
    8 GPUs), LAMB lr 0.00176 with 3125 warm-up steps then linear decay over 125K, weight decay 0.01."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    assert cfg.model._name == arch and cfg.task._name == "segabert_mlm" and cfg.criterion == "masked_lm_sop"
    assert cfg.task.sentence_order_prediction and cfg.task.tokens_per_sample == 512 and cfg.task.mask_prob == 0.15
    assert 8 * cfg.dataset.batch_size * cfg.optimization.update_freq[0] == 4096
    assert cfg.optimizer._name == "torch_lamb" and list(cfg.optimization.lr) == [0.00176]
    assert cfg.optimizer.weight_decay == 0.01 and cfg.optimization.clip_norm == 1.0
    assert cfg.lr_scheduler._name == "polynomial_decay" and cfg.lr_scheduler.power == 1.0
    assert cfg.lr_scheduler.warmup_updates == 3125 and cfg.lr_scheduler.total_num_update == 125000
    assert cfg.optimization.max_update == 125000 and cfg.lr_scheduler.end_learning_rate == 0.0


@pytest.fixture(scope="module")
def objective_corpus(tmp_path_factory):
    """About 137k tokens of generated WikiText (enough for a few batches of 64 x 512 tokens)."""
    tmp = tmp_path_factory.mktemp("objective_corpus")
    write_wikitext(tmp / "corpus.txt", make_documents(700, seed=3))
    write_wikitext(tmp / "valid.txt", make_documents(10, seed=4))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "valid.txt", "--destdir", tmp / "bin")
    return tmp / "bin"


@pytest.mark.end_to_end
@pytest.mark.parametrize("name,arch", ALBERT_YAMLS)
def test_albert_configs_train_at_their_shapes(name, arch, objective_corpus, tmp_path):
    """Each ALBERT yaml as shipped (64 sequences of 512 tokens a batch, update_freq 8, SOP, torch_lamb), only the
    width narrowed (the 12 shared layers kept): 2 updates on CPU."""
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name,
                  f"task.data={objective_corpus}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=2", "+model.encoder_embed_dim=32",
                  "+model.encoder_ffn_embed_dim=64", "+model.encoder_attention_heads=2",
                  "+model.factorized_embed_dim=16")
    assert "done training" in out and "sop_accuracy" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert cfg["dataset"]["batch_size"] == 64 and cfg["task"]["tokens_per_sample"] == 512
    assert cfg["model"]["share_encoder_layers"] == "all" and cfg["model"]["encoder_layers"] == 12
    assert "encoder.sentence_encoder.layers.0.fc1.weight" in state["model"]
    assert "encoder.sentence_encoder.layers.1.fc1.weight" not in state["model"]
    assert "classification_heads.sentence_order.out_proj.weight" in state["model"]
    assert ("encoder.segment_embeddings.paragraph.weight" in state["model"]) == (name == "albert_base")
