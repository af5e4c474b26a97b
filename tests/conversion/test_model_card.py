"""The model card and generation_config.json of an export: the hub's metadata block, how to load it, the
checkpoint's task, data and settings, and its held-out figure when it has one."""
import json

import pytest
import torch
import yaml
from conftest import run_cli

from segatron_fairseq.conversion.exporters.model_card import card_files, checkpoint_facts, model_card
from segatron_fairseq.hub.checkpoints import checkpoint_model_name, checkpoint_task_name, read_checkpoint


def _metadata(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_a_trained_segatron_xl_exports_with_its_card_and_generation_config(segatron_xl_trained, tmp_path):
    """segatron_xl_tiny after 30 updates with validation: the card names the remote code, the task, data and
    settings, and the last validation loss with its perplexity; generation_config.json holds the config's ids
    and loads in transformers."""
    from transformers import GenerationConfig

    checkpoint = segatron_xl_trained / "ckpt" / "checkpoint_last.pt"
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", segatron_xl_trained / "bin",
            "--out", tmp_path / "hf")
    card = (tmp_path / "hf" / "README.md").read_text()
    assert _metadata(card) == {"library_name": "transformers", "pipeline_tag": "text-generation",
                               "tags": ["segatron-fairseq", "fairseq", "segatron_xl", "custom_code"]}
    val_loss = torch.load(checkpoint, weights_only=False)["extra_state"]["val_loss"]
    assert f"validation loss {val_loss:.4f} (base 2), perplexity {2 ** val_loss:.2f} after 30 updates" in card
    assert "--task segatron_lm --arch segatron_xl_tiny --criterion segatron_lm_loss --optimizer adam" in card
    assert "--max-update 30 --batch-size 4" in card
    assert 'AutoModelForCausalLM.from_pretrained("path/to/this/directory", trust_remote_code=True)' in card
    # what the remote code and the modules shipped with it import (tests/conversion/test_export_requirements.py)
    assert "## Requirements" in card and \
        '\npip install torch "transformers>=4.35.2" nltk numpy sentencepiece tokenizers\n' in card
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    generation = GenerationConfig.from_pretrained(tmp_path / "hf")
    assert (generation.eos_token_id, generation.pad_token_id) == (config["eos_token_id"], config["pad_token_id"])
    assert generation.do_sample is False


def test_cards_by_class_and_without_a_validation(segatron_xl_trained):
    """The pipeline tag and loading class follow the exported class; a plain class needs no remote code; a
    checkpoint without a validation says so; only causal language models get generation_config.json."""
    state = read_checkpoint(segatron_xl_trained / "ckpt" / "checkpoint_last.pt")
    facts = checkpoint_facts("checkpoint_last.pt", state, checkpoint_model_name(state), checkpoint_task_name(state))
    facts.val_loss = None
    masked = model_card({"architectures": ["BertForMaskedLM"]}, facts)
    assert _metadata(masked)["pipeline_tag"] == "fill-mask" and "custom_code" not in _metadata(masked)["tags"]
    assert 'AutoModelForMaskedLM.from_pretrained("path/to/this/directory")' in masked
    assert "holds no validation figure" in masked
    assert set(card_files({"architectures": ["ElectraForPreTraining"]}, facts)) == {"README.md"}
    assert "pipeline_tag" not in _metadata(card_files({"architectures": ["ElectraForPreTraining"]}, facts)["README.md"])
    xlnet = card_files({"architectures": ["XLNetLMHeadModel"], "eos_token_id": 2, "pad_token_id": 1}, facts)
    assert json.loads(xlnet["generation_config.json"]) == {"eos_token_id": 2, "pad_token_id": 1, "do_sample": False}
    assert card_files({"architectures": ["XLNetLMHeadModel"]}, None) == {}


@pytest.mark.parametrize("loss, figure", [(3.0, "perplexity 8.00"), (5000.0, "perplexity inf")])
def test_the_perplexity_of_a_language_model_task(segatron_xl_trained, loss, figure):
    state = read_checkpoint(segatron_xl_trained / "ckpt" / "checkpoint_last.pt")
    facts = checkpoint_facts("checkpoint_last.pt", state, "segatron_xl", "segatron_lm")
    facts.val_loss = loss
    assert figure in model_card({"architectures": ["SegatronXLForCausalLM"]}, facts)
    facts.task = "indexed_sentence_prediction"  # a classifier's loss: no perplexity
    assert "perplexity" not in model_card({"architectures": ["SegaBertForMaskedLM"]}, facts)


def test_the_cards_command_builds_the_model_of_a_yaml_run(tmp_path):
    """A yaml run's configuration names the model (segatron_xl), not a sized architecture: the card's command
    adds the model's fields off the architecture's defaults, so fairseq's parser, given the command, sets every
    field of the checkpoint's model section (a flag for a true bool, the authors' distances as a string)."""
    import dataclasses
    import shlex

    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    from segatron_fairseq.models.segatron_xl import SegatronXLConfig

    model = {**{f.name: getattr(SegatronXLConfig(), f.name) for f in dataclasses.fields(SegatronXLConfig)},
             "_name": "segatron_xl", "decoder_layers": 3, "decoder_embed_dim": 48, "mem_len": 24, "pre_norm": True,
             "dropout": 0.05, "segment_distance_origin": "window_end", "adaptive_softmax_cutoff": "20,40"}
    cfg = OmegaConf.create({"model": model, "task": {"_name": "segatron_lm", "data": "DATA"},
                            "criterion": {"_name": "segatron_lm_loss"}, "optimizer": {"_name": "adam"},
                            "optimization": {"lr": [0.001], "max_update": 10}, "dataset": {"batch_size": 4}})
    facts = checkpoint_facts("checkpoint_last.pt", {"cfg": cfg}, "segatron_xl", "segatron_lm")
    assert not facts.unset_model_fields
    card = model_card({"architectures": ["SegatronXLForCausalLM"], "auto_map": {}}, facts)
    blocks = [block.split("\n```")[0] for block in card.split("```bash\n")[1:]]
    assert blocks[0].startswith("pip install")  # ## Requirements
    command = shlex.split(blocks[1])
    assert command[:2] == ["fairseq-train", "DATA"]
    assert "--pre-norm" in command and "--decoder-layers" in command and "--decoder-ffn-embed-dim" not in command
    (tmp_path / "dict.txt").write_text("a 1\n")
    args = options.parse_args_and_arch(options.get_training_parser(), [str(tmp_path)] + command[2:])
    built = convert_namespace_to_omegaconf(args).model  # what fairseq-train builds the model from
    for name, value in model.items():
        if name != "_name":
            assert built[name] == value, name
