"""Old names of renamed tasks and criterions: ``register_alias`` enters an
old name in fairseq's registries (the class and its dataclass) and in
hydra's ConfigStore, so ``--task OLD``, ``task._name: OLD`` in a yaml and a
checkpoint saved under OLD all build the renamed class. ``registered_name``
is the current name of a name or an alias.

fairseq validates ``--task`` and ``--criterion`` against its registries'
keys, so an alias is one of their choices: ``--criterion``'s ``--help``
lists it (``--task`` shows only ``TASK``)."""
from typing import Dict, Tuple

from hydra.core.config_store import ConfigStore

ALIASES: Dict[Tuple[str, str], str] = {}  # (kind, alias) -> the registered name it stands for


def _registries(kind: str):
    """fairseq's (class registry, dataclass registry) of ``kind``, "task" or "criterion"."""
    if kind == "task":
        from fairseq.tasks import TASK_DATACLASS_REGISTRY, TASK_REGISTRY

        return TASK_REGISTRY, TASK_DATACLASS_REGISTRY
    if kind == "criterion":
        from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY

        return CRITERION_REGISTRY, CRITERION_DATACLASS_REGISTRY
    raise ValueError(f"kind {kind!r}: 'task' or 'criterion'")


def register_alias(kind: str, alias: str, name: str) -> None:
    """Register ``alias`` as another name of the ``kind`` ("task" or
    "criterion") registered as ``name``."""
    classes, dataclasses = _registries(kind)
    if alias in classes:
        raise ValueError(f"Cannot register duplicate {kind} ({alias})")
    classes[alias] = classes[name]
    dataclass = dataclasses[name]
    dataclasses[alias] = dataclass
    node = dataclass()
    node._name = alias
    ConfigStore.instance().store(name=alias, group=kind, node=node, provider="fairseq")
    ALIASES[kind, alias] = name


def registered_name(kind: str, name: str) -> str:
    """The name ``name`` stands for: itself, or the name it is an alias of."""
    return ALIASES.get((kind, name), name)
