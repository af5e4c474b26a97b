"""The 0.2.0 names of the renamed tasks and criterions stay registered as aliases (``tasks/registry_aliases.py``):
on the command line, in a yaml and in a checkpoint saved under them, each builds the renamed class, and a checkpoint
saved under an old name loads with the same outputs."""
import pytest
import torch
from conftest import ROOT
from fairseq import checkpoint_utils, options, tasks
from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY
from fairseq.dataclass.initialize import add_defaults
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.tasks import TASK_DATACLASS_REGISTRY, TASK_REGISTRY
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.tasks.registry_aliases import ALIASES, register_alias, registered_name

RENAMED = [("task", "segabert_squad", "extractive_qa"),
           ("task", "segabert_sentence_prediction", "indexed_sentence_prediction"),
           ("task", "segabert_multiple_choice", "multiple_choice_qa"),
           ("task", "segabert_siamese_nli", "siamese_nli"),
           ("criterion", "segabert_squad", "extractive_qa"),
           ("criterion", "segabert_multiple_choice", "multiple_choice_qa"),
           ("criterion", "segabert_siamese", "siamese_nli")]
REGISTRIES = {"task": (TASK_REGISTRY, TASK_DATACLASS_REGISTRY),
              "criterion": (CRITERION_REGISTRY, CRITERION_DATACLASS_REGISTRY)}


def test_every_alias_is_listed_here():
    assert ALIASES == {(kind, old): new for kind, old, new in RENAMED}


@pytest.mark.parametrize("kind, old, new", RENAMED, ids=lambda x: x)
def test_an_old_name_registers_the_renamed_class(kind, old, new):
    classes, dataclasses = REGISTRIES[kind]
    assert classes[old] is classes[new] and dataclasses[old] is dataclasses[new]
    store = ConfigStore.instance()
    node, renamed = store.load(f"{kind}/{old}.yaml").node, store.load(f"{kind}/{new}.yaml").node
    assert node._name == old and renamed._name == new and set(node) == set(renamed)
    assert registered_name(kind, old) == new and registered_name(kind, new) == new


def test_an_alias_taken_is_refused():
    with pytest.raises(ValueError, match=r"^Cannot register duplicate task \(segabert_squad\)$"):
        register_alias("task", "segabert_squad", "extractive_qa")
    with pytest.raises(ValueError, match="kind 'model'"):
        register_alias("model", "a", "b")


def test_criterion_classes_keep_their_names():
    """fairseq-train resuming a checkpoint compares the criterion's class name with the one it saved."""
    names = {name: CRITERION_REGISTRY[name].__name__ for name in ("extractive_qa", "multiple_choice_qa", "siamese_nli")}
    assert names == {"extractive_qa": "SpanPredictionCriterion", "multiple_choice_qa": "MultipleChoiceCriterion",
                     "siamese_nli": "SiameseClassificationCriterion"}


# fairseq's transformer layers copy their weights into these on loading, for torch's fast path (zeros before)
FAST_PATH_COPIES = {f"{name}_{part}" for name in ("in_proj", "out_proj", "fc1", "fc2") for part in ("weight", "bias")}


# each old task name, its old criterion name (or a shared criterion) and the options it needs
OLD_COMMANDS = {"segabert_squad": ["--criterion", "segabert_squad"],
                "segabert_sentence_prediction": ["--criterion", "sentence_prediction_metrics", "--glue-task", "RTE"],
                "segabert_multiple_choice": ["--criterion", "segabert_multiple_choice"],
                "segabert_siamese_nli": ["--criterion", "segabert_siamese"]}


def _features(model):
    torch.manual_seed(1)
    src = torch.randint(5, 30, (2, 7))
    index = {f"{level}_index": torch.zeros(2, 7, dtype=torch.long) for level in ("paragraph", "sentence", "token")}
    return model.eval().token_features(src, **index)


@pytest.mark.parametrize("old", OLD_COMMANDS)
def test_a_checkpoint_saved_under_an_old_name_loads_the_same_model(old, tmp_path, segabert_corpus):
    """The command line of an old task name builds the renamed task and its criterion; the checkpoint fairseq-train
    saves from it (``cfg.task._name`` the old name) loads with the same weights and features."""
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(tmp_path), "--user-dir", PLUGIN_DIR, "--task", old, *OLD_COMMANDS[old], "--arch", "segabert_tiny",
        "--pretrain-data", str(segabert_corpus)])
    cfg = convert_namespace_to_omegaconf(args)
    assert cfg.task._name == old
    task = tasks.setup_task(cfg.task)
    assert type(task) is TASK_REGISTRY[registered_name("task", old)]
    criterion = task.build_criterion(cfg.criterion)
    torch.manual_seed(0)
    model = task.build_model(cfg.model)
    state = {"cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True), "model": model.state_dict(),
             "optimizer_history": [{"criterion_name": type(criterion).__name__, "optimizer_name": "Adam",
                                    "lr_scheduler_state": {}, "num_updates": 0}],
             "extra_state": {}, "last_optimizer_state": None, "task_state": {}, "args": None}
    torch.save(state, tmp_path / "old.pt")
    [loaded], _, loaded_task = checkpoint_utils.load_model_ensemble_and_task([str(tmp_path / "old.pt")])
    assert type(loaded_task) is type(task) and loaded_task.cfg._name == old
    parameters = dict(loaded.named_parameters())
    assert parameters.keys() == dict(model.named_parameters()).keys()
    assert all(torch.equal(parameters[name], p) for name, p in model.named_parameters()
               if name.rsplit(".", 1)[-1] not in FAST_PATH_COPIES)
    torch.testing.assert_close(_features(loaded), _features(model))


# the task and criterion lines of shipped yamls as 0.2.0 wrote them
OLD_YAML_LINES = {"segabert_squad": {"  _name: extractive_qa\n": "  _name: segabert_squad\n"},  # task and criterion
                  "s_segabert_nli": {"  _name: siamese_nli\n": "  _name: segabert_siamese_nli\n",
                                     "criterion: siamese_nli\n": "criterion: segabert_siamese\n"}}


@pytest.mark.parametrize("config", OLD_YAML_LINES)
def test_a_yaml_naming_the_old_task_and_criterion_sets_them_up(config, tmp_path, segabert_corpus):
    from hydra import compose, initialize_config_dir

    text = (ROOT / "segatron_fairseq" / "config" / f"{config}.yaml").read_text()
    for line, old in OLD_YAML_LINES[config].items():
        assert line in text
        text = text.replace(line, old)
    (tmp_path / f"{config}.yaml").write_text(text)
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        cfg = compose(config_name=config, overrides=["task.data=/d", f"task.pretrain_data={segabert_corpus}",
                                                     "checkpoint.restore_file=/c"])
    add_defaults(cfg)
    assert (cfg.task._name, cfg.criterion._name) in {("segabert_squad", "segabert_squad"),
                                                     ("segabert_siamese_nli", "segabert_siamese")}
    assert "classification_head_name" in cfg.task
    task = tasks.setup_task(cfg.task)
    assert type(task) is TASK_REGISTRY[registered_name("task", cfg.task._name)]
    criterion = task.build_criterion(cfg.criterion)
    assert type(criterion) is CRITERION_REGISTRY[registered_name("criterion", cfg.criterion._name)]
