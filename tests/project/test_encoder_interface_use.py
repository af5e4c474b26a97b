"""Tasks, criterions, the hub, the CLI, evaluation and generation reach a model only through what its class offers
(``models/encoder_interface.py``, the model classes' methods and properties, ``nn.Module`` and fairseq's model API):
no ``hasattr`` / ``getattr`` on a model and no attribute path into its instance's internals (``model.encoder``,
``model.args``, ``model.classification_heads``...). Each file is parsed with ``ast``; a model is an expression named
``model`` or ending in ``.model`` (``self.model``, ``hub.model``, ``loaded.model``; not ``cfg.model``, a
configuration). What a class offers is the union over the plugin's model classes (a method of one model called on
another passes), and only expressions named as above are seen: the test finds reaching into internals, not every
wrong call."""
import ast
from pathlib import Path
from typing import List, Set, Tuple

import torch
from fairseq.models import MODEL_REGISTRY, BaseFairseqModel

from segatron_fairseq.models.encoder_interface import EncoderInterface

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ["tasks", "criterions", "hub", "cli", "evaluation", "generation"]
CONFIGURATIONS = {"cfg", "args"}  # ``cfg.model`` is the model's configuration, not the model


def offered_names() -> Set[str]:
    """What a model's class offers: public names of every registered model class, fairseq's and nn.Module's."""
    classes = [BaseFairseqModel, torch.nn.Module, EncoderInterface] + [
        cls for cls in MODEL_REGISTRY.values() if cls.__module__.startswith("segatron_fairseq.")]
    return {name for cls in classes for name in dir(cls) if not name.startswith("_")} | {"training"}


def is_model(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "model"
    return (isinstance(node, ast.Attribute) and node.attr == "model"
            and not (isinstance(node.value, ast.Name) and node.value.id in CONFIGURATIONS))


def uses_of_internals(source: str, offered: Set[str]) -> List[ast.AST]:
    """Every ``hasattr`` / ``getattr`` on a model and every attribute of a model its class does not offer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
                and node.args and is_model(node.args[0])):
            found.append(node)
        elif isinstance(node, ast.Attribute) and is_model(node.value) and node.attr not in offered:
            found.append(node)
    return found


def uses() -> List[Tuple[str, int, str]]:
    """(file under segatron_fairseq/, line, code) of every use of a model's internals in the checked packages."""
    offered, found = offered_names(), []
    for package in CHECKED:
        for path in sorted((ROOT / "segatron_fairseq" / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            relative = path.relative_to(ROOT / "segatron_fairseq").as_posix()
            found += [(relative, node.lineno, ast.get_source_segment(source, node))
                      for node in uses_of_internals(source, offered)]
    return found


def test_no_probing_or_internals_of_models():
    assert {"token_features", "task_head", "index_tables", "eval"} <= offered_names()
    assert not {"encoder", "args", "classification_heads", "network", "generator"} & offered_names()
    problems = [f"segatron_fairseq/{path}:{line}: {code}" for path, line, code in uses()]
    assert not problems, "models used past their interface (models/encoder_interface.py):\n" + "\n".join(problems)


def test_the_checker_sees_probes_and_paths():
    offered = {"token_features", "eval"}
    source = ("hasattr(model, 'x')\ngetattr(self.model, 'y', None)\nmodel.encoder.sentence_encoder\n"
              "hub.model.args\nmodel.token_features(x)\ncfg.model.max_index\nmodel.eval()\n")
    found = {ast.get_source_segment(source, node) for node in uses_of_internals(source, offered)}
    assert found == {"hasattr(model, 'x')", "getattr(self.model, 'y', None)", "model.encoder", "hub.model.args"}
