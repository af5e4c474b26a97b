"""The layers of ARCHITECTURE.md, read from the source: every module belongs to a layer, imports only from its
own layer or those below (imports inside functions count), and no modules import each other in a cycle.
Nothing is imported: each file is parsed with ``ast``. ARCHITECTURE.md's layer table lists the same layers."""
import ast
import re
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"segatron_fairseq": ROOT / "segatron_fairseq", "segatron_preprocess": ROOT / "preprocess"}

# lowest first: (layer, the packages / modules in it); ARCHITECTURE.md's layer table must list the same
LAYERS = [
    ("corpus format", ["segatron_preprocess.corpus_format"]),
    ("binarizer", ["segatron_preprocess"]),
    ("segment layout", ["segatron_fairseq.segments"]),
    ("modules", ["segatron_fairseq.modules"]),
    ("data", ["segatron_fairseq.data"]),
    ("evaluation, generation", ["segatron_fairseq.evaluation", "segatron_fairseq.generation"]),
    ("models", ["segatron_fairseq.models"]),
    ("hub", ["segatron_fairseq.hub"]),
    ("tasks, criterions, optimizers", ["segatron_fairseq.tasks", "segatron_fairseq.criterions",
                                       "segatron_fairseq.optim"]),
    ("plugin", ["segatron_fairseq"]),  # the package itself: what --user-dir imports
    ("conversion", ["segatron_fairseq.conversion"]),
    ("cli", ["segatron_fairseq.cli"]),
]
# (importer, imported) pairs allowed to reach a layer above, each with its reason; keep it empty if you can
UPWARD_IMPORTS: Dict[Tuple[str, str], str] = {
    **{(f"segatron_fairseq.models.{model}", f"segatron_fairseq.hub.{model}"):
       "fairseq's Model.from_pretrained returns the model's hub interface (imported when called)"
       for model in ("segabert", "cloze_two_tower", "cross_thought", "segatron_xl")},
}
# packages whose every module belongs to the layer (the plugin layer is the package's __init__ alone)
_WHOLE = {prefix for _, prefixes in LAYERS for prefix in prefixes if prefix != "segatron_fairseq"}


def _modules() -> Dict[str, Path]:
    modules = {}
    for package, directory in PACKAGES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = path.relative_to(directory).with_suffix("").parts
            name = ".".join((package,) + parts)
            modules[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return modules


MODULES = _modules()


def layer_of(module: str) -> Optional[int]:
    """The number of ``module``'s layer (0: the lowest), or None."""
    if module == "segatron_fairseq":
        return next(i for i, (name, _) in enumerate(LAYERS) if name == "plugin")
    best = None
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix in _WHOLE and (module == prefix or module.startswith(prefix + ".")):
                if best is None or len(prefix) > len(best[1]):
                    best = (number, prefix)
    return None if best is None else best[0]


def _known(name: str) -> Optional[str]:
    """The longest prefix of ``name`` that is one of our modules."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(module: str) -> List[Tuple[str, int]]:
    """(imported module of ours, line) of every import statement of ``module``, at any depth."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # "from package import submodule" imports the submodule
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            known = _known(target)
            if known is not None and known != module:
                found.append((known, node.lineno))
    return found


def test_every_module_has_a_layer():
    missing = [module for module in MODULES if layer_of(module) is None]
    assert not missing, f"modules outside every layer of tests/project/test_layers.py (and ARCHITECTURE.md): {missing}"


def test_no_module_imports_from_a_layer_above():
    upward = []
    for module in MODULES:
        for target, line in imports_of(module):
            if layer_of(target) > layer_of(module) and (module, target) not in UPWARD_IMPORTS:
                upward.append(f"{MODULES[module].relative_to(ROOT)}:{line} ({LAYERS[layer_of(module)][0]}) imports "
                              f"{target} ({LAYERS[layer_of(target)][0]})")
    assert not upward, "imports from a layer above:\n" + "\n".join(upward)


def test_the_allowed_upward_imports_exist():
    for (module, target), reason in UPWARD_IMPORTS.items():
        assert reason and target in {t for t, _ in imports_of(module)}, f"{module} no longer imports {target}"


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan), or of one that imports itself."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles():
    graph = {module: {target for target, _ in imports_of(module)} for module in MODULES}
    assert not _cycles(graph), f"modules that import each other: {_cycles(graph)}"


def test_the_checker_sees_lazy_upward_imports_and_cycles():
    """The checks themselves, on a made-up graph and on this repository's own layers."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("segatron_preprocess.corpus_format") < layer_of("segatron_preprocess.binarize")
    assert layer_of("segatron_fairseq.segments.layout") < layer_of("segatron_fairseq.models.segabert")
    assert layer_of("segatron_fairseq") < layer_of("segatron_fairseq.cli.components")
    assert layer_of("segatron_fairseq.loose_module") is None
    # an import inside a function is seen (cross-thought-rank loads its hub after parsing its arguments)
    assert "segatron_fairseq.hub.checkpoints" in {t for t, _ in imports_of("segatron_fairseq.cli.cross_thought_rank")}


def layer_table(markdown: str) -> List[Tuple[str, List[str]]]:
    """The rows of the table headed ``| layer | packages | what |``: (layer, the packages spelled as code in its
    second cell)."""
    rows, inside = [], False
    for line in markdown.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            inside = False
        elif cells[:2] == ["layer", "packages"]:
            inside = True
        elif inside and not set(cells[0]) <= set("-: "):
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    return rows


def test_architecture_draws_these_layers():
    """The layer table of ARCHITECTURE.md is LAYERS: the same layers with the same packages, in order."""
    table = layer_table((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert table == [(name, list(prefixes)) for name, prefixes in LAYERS], (
        "ARCHITECTURE.md's layer table differs from LAYERS in tests/project/test_layers.py:\n"
        + "\n".join(f"  {row}" for row in table))


def test_the_layer_table_reader_reads_rows_in_order():
    markdown = ("text\n| layer | packages | what |\n| --- | --- | --- |\n| low | `a.b` | x |\n"
                "| high | `a.c`, `a.d` | `y` |\n\n| layer | other |\n| no | `z` |\n")
    assert layer_table(markdown) == [("low", ["a.b"]), ("high", ["a.c", "a.d"])]
    assert layer_table(markdown.replace("`a.d`", "")) != layer_table(markdown)
