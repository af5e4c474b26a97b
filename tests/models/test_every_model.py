"""The same checks over every registered model of the plugin (Hugging Face's ModelTesterMixin over fairseq's
registry), each built tiny by ``tests/tiny_models.py``: a save / load round trip through fairseq's
``checkpoint_utils``, the upgrade of a state dict laid out as 0.1.0 / 0.2.0 saved it, a padded batch against its
rows run one by one, and the task heads' restore. A model that cannot take a check says why in ``CANNOT``."""
import copy
import functools

import pytest
import tiny_models
import torch
from fairseq import checkpoint_utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf
from tiny_models import PAD, build, encoder_batch, plugin_models, recipe, tiny_args, tiny_batch, tiny_task

from segatron_fairseq.models.encoder_interface import EncoderInterface
from segatron_fairseq.models.segatron_xl import SegatronXLModel
from segatron_fairseq.models.xlnet import XLNetModel

VARIANTS = tiny_models.variants()

# (model, check) -> why that model cannot take the check
CANNOT = {
    ("segatron_xl", "heads"): "a language model: no task heads",
    ("cross_thought", "old_layout"): "0.1.0 and 0.2.0 saved it as it is saved now (its upgrade is RoBERTa's)",
    ("cross_thought", "padded_encoder_batch"): "its input is (B, M, L) short sequences: the pre-training batch "
                                                "pads them",
    ("segatron_xl", "padded_encoder_batch"): "a language model over the unpadded token stream",
}


def _cannot(model_name: str, check: str) -> None:
    if (model_name, check) in CANNOT:
        pytest.skip(CANNOT[model_name, check])


@functools.cache
def _config(model_name: str, variant: str):
    """fairseq's omegaconf ``cfg`` of the variant, as fairseq-train makes it and a checkpoint holds it."""
    arch, extra = recipe(model_name).variants[variant]
    return convert_namespace_to_omegaconf(tiny_args(arch, *extra))


def _setup(model_name: str, variant: str):
    """(cfg, task) of the variant (a copy of the cfg: building a model fills in its fields)."""
    cfg = copy.deepcopy(_config(model_name, variant))
    return cfg, tiny_task(cfg)


def outputs(model, net_input) -> torch.Tensor:
    """The model's pre-training output of ``net_input``, any memory forgotten first."""
    if isinstance(model, (SegatronXLModel, XLNetModel)):
        model.reset_memory()
    with torch.no_grad():
        out = model(**net_input)
    return out["cloze"] if isinstance(out, dict) else out[0]


def _save(model, cfg, task, path, state_dict=None) -> None:
    """A checkpoint as fairseq's trainer writes it (of ``state_dict``, by default the model's)."""
    state = {"args": None, "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
             "model": model.state_dict() if state_dict is None else state_dict, "criterion": None,
             "task_state": task.state_dict(),
             "optimizer_history": [{"criterion_name": "MaskedLmLoss", "optimizer_name": "FairseqAdam",
                                    "lr_scheduler_state": {"best": None}, "num_updates": 0}],
             "extra_state": {"epoch": 1, "train_iterator": {"epoch": 1, "iterations_in_epoch": 0}},
             "last_optimizer_state": None}
    checkpoint_utils.torch_persistent_save(state, str(path))


def _loaded_into(model, path, cfg):
    """``model`` after fairseq's trainer loads the checkpoint ``path`` into it (upgrade, then strict)."""
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    model.load_state_dict(state["model"], strict=True, model_cfg=cfg.model)
    return model.eval()


def test_every_registered_model_has_a_recipe():
    assert {"segatron_xl", "segabert", "xlnet", "cloze_two_tower", "cross_thought"} <= set(plugin_models())
    assert [name for name in plugin_models() if name not in tiny_models.RECIPES] == []


@pytest.mark.parametrize("model_name,variant", VARIANTS)
def test_save_and_load_round_trip(model_name, variant, tmp_path):
    """fairseq's checkpoint_utils: a saved model loads (load_model_ensemble, the task given) with equal outputs."""
    cfg, task = _setup(model_name, variant)
    model = build(cfg.model, task)
    net_input = tiny_batch(model)
    _save(model, cfg, task, tmp_path / "checkpoint.pt")
    [loaded], loaded_cfg = checkpoint_utils.load_model_ensemble([str(tmp_path / "checkpoint.pt")], task=task)
    assert type(loaded) is type(model) and loaded_cfg.model._name == cfg.model._name
    torch.testing.assert_close(outputs(loaded.eval(), net_input), outputs(model, net_input), rtol=0, atol=0)


def _segatron_xl_0_1_0(state, model):
    """0.1.0: each layer's attention LayerNorm inside its attention, one u, v pair per layer."""
    old = {key.replace(".attention_norm.", ".attention.layer_norm."): value for key, value in state.items()}
    for key in ("decoder.content_bias", "decoder.position_bias"):
        old[key] = old[key].expand(len(model.decoder.layers), -1, -1).clone()
    return old


def _segabert_0_2_0(state, model):
    """0.2.0: task heads among RoBERTa's classification heads; 0.1.0: no token-type table (zeros add nothing)."""
    old = {key.replace("task_heads.", "classification_heads."): value for key, value in state.items()}
    types = "encoder.token_type_embeddings.weight"
    if types in old:
        model.encoder.token_type_embeddings.weight.data.zero_()
        del old[types]
    return old


def _xlnet_0_2_0(state, model):
    """Before ``relative_positions`` was saved."""
    return {key: value for key, value in state.items() if key != "relative_positions"}


def _cloze_0_2_0(state, model):
    """Before ``sentence_token_positions`` was saved."""
    return {key: value for key, value in state.items() if key != "network.sentence_token_positions"}


OLD_LAYOUTS = {"segatron_xl": _segatron_xl_0_1_0, "segabert": _segabert_0_2_0, "segabert_electra": _segabert_0_2_0,
               "xlnet": _xlnet_0_2_0, "cloze_two_tower": _cloze_0_2_0}


def _with_head(model, name="answer", classes=2):
    """``model`` with a task head ``name`` (8 -> ``classes``: only its weights are compared)."""
    if isinstance(model, EncoderInterface):
        model.register_task_head(name, torch.nn.Linear(8, classes))
    return model


@pytest.mark.parametrize("model_name,variant", VARIANTS)
def test_an_old_state_dict_upgrades_to_the_same_outputs(model_name, variant, tmp_path):
    """A checkpoint whose state dict is laid out as an earlier release saved it loads through the model's
    ``upgrade_state_dict_named`` and gives the same outputs (and heads)."""
    _cannot(model_name, "old_layout")
    cfg, task = _setup(model_name, variant)
    model = _with_head(build(cfg.model, task))
    old = OLD_LAYOUTS[model_name](model.state_dict(), model)
    assert set(old) != set(model.state_dict())
    net_input = tiny_batch(model)
    _save(model, cfg, task, tmp_path / "old.pt", old)
    loaded = _loaded_into(_with_head(build(cfg.model, task, seed=1)), tmp_path / "old.pt", cfg)
    torch.testing.assert_close(outputs(loaded, net_input), outputs(model, net_input), rtol=0, atol=0)
    if isinstance(model, EncoderInterface):
        torch.testing.assert_close(loaded.task_head("answer").weight, model.task_head("answer").weight)


def _rows_one_by_one(model, net_input, run) -> None:
    """The batch's output at each row's real positions equals the row's own, unpadded, run alone."""
    batch = run(model, net_input)
    tokens = net_input["src_tokens"]
    lengths = net_input.get("src_lengths", torch.full((len(tokens),), tokens.size(-1)))
    for i, length in enumerate(lengths.tolist()):
        row = {key: value[i:i + 1, :length] if torch.is_tensor(value) and value.dim() > 1 else
               value[i:i + 1] if torch.is_tensor(value) else value for key, value in net_input.items()}
        alone = run(model, row)
        real, alone_real = tokens[i].ne(PAD)[..., :length], row["src_tokens"][0].ne(PAD)
        ours = batch[i, :length] if batch.shape[:2] == tokens.shape[:2] else batch[i]
        if ours.shape[:real.dim()] == real.shape:
            ours, alone_row = ours[real], alone[0][alone_real]
        else:
            alone_row = alone[0]
        torch.testing.assert_close(ours, alone_row, rtol=0, atol=1e-5)


@pytest.mark.parametrize("model_name,variant", VARIANTS)
def test_a_padded_batch_equals_its_rows_one_by_one(model_name, variant):
    """The pre-training batch (float64, eval mode) against each row alone, without its padding."""
    cfg, task = _setup(model_name, variant)
    model = build(cfg.model, task, dtype=torch.float64)
    _rows_one_by_one(model, tiny_batch(model, rows=3, padded=True), outputs)


@pytest.mark.parametrize("model_name,variant", VARIANTS)
def test_a_padded_encoder_batch_gives_the_features_of_its_rows(model_name, variant):
    """``token_features`` of a right-padded fine-tuning batch against each row alone."""
    _cannot(model_name, "padded_encoder_batch")
    cfg, task = _setup(model_name, variant)
    model = build(cfg.model, task, dtype=torch.float64)

    def features(model, net_input):
        with torch.no_grad():
            return model.token_features(**net_input)

    _rows_one_by_one(model, encoder_batch(model, rows=3, padded=True), features)


@pytest.mark.parametrize("model_name,variant", VARIANTS)
def test_heads_restore(model_name, variant, tmp_path, caplog):
    """A saved task head loads into a model built for fine-tuning with it; a head the checkpoint lacks keeps the
    model's own; one of another shape is left out with a warning (the model's own kept)."""
    _cannot(model_name, "heads")
    cfg, task = _setup(model_name, variant)
    saved = _with_head(_with_head(build(cfg.model, task), "kept"), "reshaped", classes=3)
    torch.nn.init.normal_(saved.task_head("kept").weight)
    _save(saved, cfg, task, tmp_path / "pretrained.pt")
    model = _with_head(_with_head(_with_head(build(cfg.model, task, seed=1), "kept"), "reshaped", classes=5), "new")
    own = {name: model.task_head(name).weight.clone() for name in ("reshaped", "new")}
    _loaded_into(model, tmp_path / "pretrained.pt", cfg)
    torch.testing.assert_close(model.task_head("kept").weight, saved.task_head("kept").weight)
    torch.testing.assert_close(model.task_head("reshaped").weight, own["reshaped"])
    torch.testing.assert_close(model.task_head("new").weight, own["new"])
    assert "leaving out" in caplog.text and "reshaped.weight" in caplog.text
