"""Hydra configs: the WikiText-103 configs carry the paper's settings; a tiny one trains."""
import argparse
import re

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, binarized_training_text, fairseq_train, run_cli
from corpus import make_documents, write_lines, write_wikitext
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from segatron_fairseq.models.segatron_xl_presets import MODEL_PRESETS, SEGMENT_PARTS, TRAINING_PRESETS

CONFIG_DIR = str(ROOT / "segatron_fairseq" / "config")
# every shipped WikiText-103 yaml: (config name, preset, model)
WT103_CONFIGS = [("segatron_xl_wt103_base", "wt103_base", "segatron_xl"),
                 ("transformer_xl_wt103_base", "wt103_base", "transformer_xl"),
                 ("segatron_xl_wt103_large", "wt103_large", "segatron_xl"),
                 ("transformer_xl_wt103_large", "wt103_large", "transformer_xl"),
                 ("segatron_xl_wt103_base_authors", "wt103_base", "segatron_xl"),
                 ("segatron_xl_wt103_large_authors", "wt103_large", "segatron_xl")]


def test_every_wt103_yaml_is_tested():
    shipped = sorted(p.stem for p in (ROOT / "segatron_fairseq" / "config").glob("*_wt103_*.yaml"))
    assert shipped == sorted(name for name, _, _ in WT103_CONFIGS)

@pytest.mark.parametrize("name,preset,model", WT103_CONFIGS)
def test_wt103_configs_compose_with_paper_settings(name, preset, model):
    from fairseq.dataclass.configs import FairseqConfig
    from fairseq.dataclass.initialize import add_defaults

    import segatron_fairseq  # noqa: F401  (registers the task, model and criterion)

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    cfg = OmegaConf.merge(OmegaConf.structured(FairseqConfig), cfg)
    add_defaults(cfg)
    for key, value in {**MODEL_PRESETS[preset], **SEGMENT_PARTS[model]}.items():
        assert cfg.model[key] == value, key
    for key, value in TRAINING_PRESETS[preset].items():
        found = OmegaConf.select(cfg, key)
        assert (list(found) if isinstance(value, list) else found) == value, key
    authors = name.endswith("_authors")  # their distances and their adaptive softmax's biases
    assert (cfg.model.segment_distance_origin == "window_end") == authors
    assert cfg.model.adaptive_softmax_bias == authors  # tied, as theirs
    assert cfg.model.tie_adaptive_weights and not cfg.model.per_layer_position_biases
    assert cfg.model.compile_layers == (preset == "wt103_base" and not authors)  # measured on a GPU for these


@pytest.mark.parametrize("arch,preset,model", [("segatron_xl_wt103_base", "wt103_base", "segatron_xl"),
                                               ("transformer_xl_wt103_base", "wt103_base", "transformer_xl"),
                                               ("segatron_xl_wt103_large", "wt103_large", "segatron_xl"),
                                               ("transformer_xl_tiny", "tiny", "transformer_xl")])
def test_architectures_apply_their_preset(arch, preset, model):
    """--arch NAME gives the preset's fields (and the model's segment parts); the config's defaults are the
    WikiText-103 base preset."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    from segatron_fairseq.models.segatron_xl import SegatronXLConfig

    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    for key, value in {**MODEL_PRESETS[preset], **SEGMENT_PARTS[model]}.items():
        assert getattr(args, key) == value, key
    defaults = SegatronXLConfig()
    for key in ("decoder_layers", "decoder_embed_dim", "decoder_attention_heads", "decoder_head_dim",
                "decoder_ffn_embed_dim", "dropout", "attention_dropout", "mem_len", "clamp_len"):
        assert getattr(defaults, key) == MODEL_PRESETS["wt103_base"][key], key


@pytest.mark.end_to_end
@pytest.mark.parametrize("config, is_its_model", [
    ("segatron_xl_tiny", lambda state: state["cfg"]["model"]["_name"] == "segatron_xl"),
    ("segabert_tiny", lambda state: "encoder.segment_embeddings.paragraph.weight" in state["model"]),
])
def test_tiny_config_trains_with_hydra(tmp_path, config, is_its_model):
    binarized_training_text(tmp_path, 20, 4)
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", config,
                  f"task.data={tmp_path / 'bin'}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}")
    assert "done training" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 20
    assert is_its_model(state)


@pytest.mark.end_to_end
def test_prepare_wikitext103_script(tmp_path):
    import subprocess

    src = tmp_path / "wikitext-103"
    src.mkdir()
    for split, seed in (("train", 1), ("valid", 2), ("test", 3)):
        write_wikitext(src / f"wiki.{split}.tokens", make_documents(8, seed=seed))
    dest = tmp_path / "bin"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "prepare_wikitext103.sh"), str(src), str(dest), "2"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for split in ("train", "valid", "test"):
        for suffix in ("", ".paragraph", ".sentence", ".token"):
            assert (dest / f"{split}{suffix}.idx").exists()
    (src / "wiki.test.tokens").unlink()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "prepare_wikitext103.sh"), str(src), str(dest)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 1 and "wiki.test.tokens is missing" in proc.stdout


@pytest.mark.parametrize("name,arch,steps", [("segabert_base", "segabert_base", 500000),
                                             ("segabert_bert_base", "segabert_bert_base", 500000),
                                             ("segabert_large", "segabert_large", 1000000)])
def test_segabert_configs_carry_the_paper_optimisation(name, arch, steps):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name=name, overrides=["task.data=/data"])
    assert cfg.model._name == arch and cfg.task._name == "segabert_mlm" and cfg.criterion == "masked_lm"
    assert list(cfg.optimization.lr) == [0.0001] and cfg.optimizer.adam_betas == "(0.9,0.999)"
    assert cfg.optimizer.weight_decay == 0.01 and cfg.lr_scheduler._name == "polynomial_decay"
    assert cfg.lr_scheduler.power == 1.0 and cfg.lr_scheduler.end_learning_rate == 0.0
    assert cfg.lr_scheduler.warmup_updates == steps // 100 and cfg.optimization.max_update == steps
    assert cfg.task.tokens_per_sample == 512 and cfg.task.mask_prob == 0.15


@pytest.mark.end_to_end
def test_prepare_wikipedia_script_reads_wikiextractor_json(tmp_path):
    import json
    import subprocess

    documents = make_documents(30, seed=9)
    for folder in ("AA", "AB"):
        (tmp_path / "extracted" / folder).mkdir(parents=True)
    for k, doc in enumerate(documents):
        text = "\n".join(" ".join(w for s in sentences for w in s) for _, sentences in doc[1:])
        path = tmp_path / "extracted" / ("AA" if k < 15 else "AB") / f"wiki_0{k % 3}"
        with open(path, "a") as f:
            f.write(json.dumps({"id": str(k), "url": "", "title": f"Lobster {k}", "text": text}) + "\n")
    dest = tmp_path / "bin"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "prepare_wikipedia.sh"), str(tmp_path / "extracted"),
                           str(dest), "100", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (dest / "sentencepiece.model").exists() and (dest / "valid.token.idx").exists()
    summary = json.loads((dest / "segatron_preprocess.json").read_text())["splits"]
    assert summary["train"]["documents"] + summary["valid"]["documents"] == 30
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]


def test_cross_thought_config_carries_the_paper_settings():
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name="cross_thought_base", overrides=["task.data=/data"])
    assert cfg.model._name == "cross_thought_base" and cfg.model.num_special_tokens == 5
    assert cfg.task.num_sequences == 500 and cfg.task.sequence_length == 64 and cfg.task.mask_prob == 0.15
    assert list(cfg.optimization.lr) == [0.0005] and cfg.optimization.max_update == 125000
    assert cfg.lr_scheduler.warmup_updates == 10000 and cfg.model.dropout == 0.1
    assert cfg.model.max_positions >= 5 + 564  # 64 word positions drawn from 0..564 after the specials
    assert 16 * cfg.dataset.batch_size * cfg.optimization.update_freq[0] == 128  # the comment's 16 GPUs


@pytest.mark.end_to_end
def test_cross_thought_base_config_pretrains_at_500_x_64(tmp_path):
    """The shipped yaml's task and dataset settings (500 sequences of 64 tokens, 5 special tokens, its
    batch size), only the model narrowed: 1 update on CPU. A sample (32,000 tokens) is far above the
    model's positions, so it trains only while sizes are checked per sequence."""
    write_lines(tmp_path / "corpus.txt", make_documents(700, seed=3))  # about 137k tokens: 5 samples
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
            "--validpref", tmp_path / "corpus.txt", "--destdir", tmp_path / "bin")
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", "cross_thought_base",
                  f"task.data={tmp_path / 'bin'}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=1", "+model.encoder_embed_dim=32",
                  "+model.encoder_ffn_embed_dim=64", "+model.encoder_layers=1", "+model.encoder_attention_heads=2")
    assert "invalid sizes" not in out
    assert "train: 5 samples of 500 x 64 tokens" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 1
    assert state["cfg"]["task"]["num_sequences"] == 500 and state["cfg"]["task"]["sequence_length"] == 64
    assert state["cfg"]["model"]["num_special_tokens"] == 5 and state["cfg"]["dataset"]["batch_size"] == 2


@pytest.mark.end_to_end
def test_cross_thought_mlm_defaults_train_with_fairseq_train(tmp_path):
    """`fairseq-train --task cross_thought_mlm --arch cross_thought_tiny` with the task's defaults (500 x 64);
    --max-tokens counts every token of a sample: 64,000 tokens hold 2 samples of 32,000, so the 3 samples
    of the split make 2 updates."""
    write_lines(tmp_path / "corpus.txt", make_documents(400, seed=5))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "corpus.txt",
            "--validpref", tmp_path / "corpus.txt", "--destdir", tmp_path / "bin")
    out = fairseq_train(tmp_path / "bin", task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                        save_dir=tmp_path / "ckpt", extra=["--max-tokens", 64000, "--max-update", 2, "--no-save",
                                                           "--disable-validation", "--log-format", "simple"])
    assert "invalid sizes" not in out and "samples of 500 x 64 tokens" in out and "done training" in out
    assert "train: 3 samples of 500 x 64 tokens" in out  # two full samples and a shorter last one
    assert re.search(r"\| bsz 1\.5 \| num_updates 2 \|", out), out[-2000:]  # batches of 2 and 1 samples


WT103_VOCAB = 267735  # WikiText-103's dictionary size, above the configs' cutoff 200000


@pytest.fixture(scope="module")
def wt103_sized_corpus(tmp_path_factory):
    """A corpus binarized with a dictionary as large as WikiText-103's (padded with unused words), so the
    configs' adaptive-softmax cutoffs 20000,40000,200000 apply as shipped; about 137k tokens, enough for
    2 updates of 128 rows x 384 tokens."""
    tmp = tmp_path_factory.mktemp("wt103_sized")
    write_wikitext(tmp / "corpus.txt", make_documents(700, seed=3))
    write_wikitext(tmp / "valid.txt", make_documents(10, seed=4))  # the end-of-run validation stays short
    words = sorted({w for path in ("corpus.txt", "valid.txt") for line in open(tmp / path) for w in line.split()})
    with open(tmp / "dict.txt", "w") as f:
        for k, word in enumerate(words + [f"unused{i}" for i in range(WT103_VOCAB - 4 - len(words))]):
            f.write(f"{word} {WT103_VOCAB - k}\n")
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "valid.txt", "--srcdict", tmp / "dict.txt", "--destdir", tmp / "bin")
    return tmp / "bin"


# the large yamls take about 17.5 GB at 128 x 384 tokens (the adaptive softmax's head: 49,152 tokens x 20,003
# logits, 3.9 GB a tensor, in the forward and backward passes): scripts/test.sh runs them alone, one at a time,
# on every core; the base ones (about 3.3 GB) run with the rest
@pytest.mark.end_to_end
@pytest.mark.parametrize("name,preset,model", [
    pytest.param(*config, marks=[pytest.mark.memory_heavy] if config[1] == "wt103_large" else [])
    for config in WT103_CONFIGS])
def test_wt103_configs_train_at_their_shapes(name, preset, model, wt103_sized_corpus, tmp_path):
    """Each shipped WikiText-103 yaml as it is (batch 64 x 150 / 128 x 384 tokens, memory 150 / 384, cutoffs
    and div_val, its criterion and optimiser), only the model narrowed: 1 update on CPU, then the end-of-run
    validation, which reads with the memory."""
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", name,
                  f"task.data={wt103_sized_corpus}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=1", "model.decoder_layers=2",
                  "model.decoder_embed_dim=64", "model.decoder_attention_heads=2", "model.decoder_head_dim=32",
                  "model.decoder_ffn_embed_dim=128")  # 64: div_val 4 leaves the last band 64 / 4**3 = 1 wide
    assert "done training" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    cfg = state["cfg"]
    assert state["optimizer_history"][-1]["num_updates"] == 1
    training, shape = TRAINING_PRESETS[preset], MODEL_PRESETS[preset]
    assert cfg["dataset"]["batch_size"] == training["dataset.batch_size"]
    assert cfg["task"]["tgt_len"] == training["task.tgt_len"]
    for key in ("mem_len", "adaptive_softmax_factor", "adaptive_softmax_cutoff"):
        assert cfg["model"][key] == shape[key], key
    for key, value in SEGMENT_PARTS[model].items():  # Transformer-XL trained without segment parts
        assert cfg["model"][key] == value, key
    bands = [state["model"][f"decoder.embed_tokens.embeddings.{k}.0.weight"].shape[0] for k in range(4)]
    assert bands == [20000, 20000, 160000, WT103_VOCAB - 200000]


def test_xlnet_base_config_carries_the_paper_settings():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    import segatron_fairseq  # noqa: F401  (registers the task, model and criterion)
    from segatron_fairseq.models.xlnet import XLNET_PRESETS

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose(config_name="xlnet_base", overrides=["task.data=/data"])
    assert cfg.model._name == "xlnet_base" and cfg.task._name == "xlnet_plm" and cfg.criterion._name == "xlnet_plm"
    for key, value in XLNET_PRESETS["base"].items():
        assert cfg.model[key] == value, key
    assert cfg.model.mem_len == 384 and cfg.model.dropout == 0.1 and not cfg.model.tie_position_biases
    assert (cfg.task.tokens_per_sample, cfg.task.reuse_len, cfg.task.partial_prediction_k) == (512, 256, 6)
    assert (cfg.task.max_gram, cfg.task.mask_alpha, cfg.task.mask_beta) == (5, 6, 1)
    assert list(cfg.optimization.lr) == [0.0004] and cfg.optimization.max_update == 500000
    assert cfg.lr_scheduler.warmup_updates == 40000 and cfg.optimizer.adam_eps == 1e-6
    assert cfg.optimizer.weight_decay == 0.01
    assert 64 * cfg.dataset.batch_size * cfg.optimization.update_freq[0] == 8192  # the comment's 64 GPUs
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["xlnet_large"](args)
    assert (args.encoder_layers, args.encoder_embed_dim, args.encoder_attention_heads,
            args.encoder_ffn_embed_dim) == (24, 1024, 16, 4096)


@pytest.mark.end_to_end
def test_xlnet_base_config_trains_at_its_shapes(tmp_path):
    """The shipped yaml as it is (8 rows of 512 tokens, reuse 256, memory 384, 85 targets, token positions;
    tests/models/test_xlnet.py takes steps with Segatron positions), only the model narrowed (2 layers, 2
    heads, width 32: the 12 layers' activations of the two streams at 512 x 896 keys take 20 GB) and one
    step per update: 2 updates on CPU, the second with a memory."""
    binarized_training_text(tmp_path, 40, 5)  # about 9k tokens: 8 rows of 1,100
    out = run_cli("fairseq-hydra-train", "--config-dir", CONFIG_DIR, "--config-name", "xlnet_base",
                  f"task.data={tmp_path / 'bin'}", f"checkpoint.save_dir={tmp_path / 'ckpt'}",
                  f"common.user_dir={PLUGIN_DIR}", f"hydra.run.dir={tmp_path / 'hydra'}", "common.cpu=true",
                  "common.fp16=false", "optimization.max_update=2", "optimization.update_freq=[1]",
                  "dataset.disable_validation=true", "model.encoder_layers=2",
                  "model.encoder_embed_dim=32", "model.encoder_attention_heads=2", "model.encoder_head_dim=16",
                  "model.encoder_ffn_embed_dim=64")
    assert "85 targets per sample" in out and "done training" in out
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    cfg = state["cfg"]
    assert cfg["task"]["tokens_per_sample"] == 512 and cfg["model"]["mem_len"] == 384
    assert cfg["dataset"]["batch_size"] == 8 and cfg["model"]["positions"] == "token"
