"""What loading an exported directory needs besides Python: torch, transformers and the packages that
its Python files import (remote code and the project's modules shipped with it), found in their source.

    >>> imported_packages({"tokenization_x.py": "import json\\nfrom .subwords import Words\\n",
    ...                    "subwords.py": "import sentencepiece as spm\\ndef f():\\n    import nltk\\n"})
    ['nltk', 'sentencepiece']
    >>> pip_command(["nltk", "sentencepiece"])
    'pip install torch "transformers>=4.35.2" nltk sentencepiece'

Imports inside functions count (the shipped sentence splitter imports NLTK when it is called), relative
imports and the standard library do not. transformers checks, before it runs remote code, only the
imports of the file that ``auto_map`` names; that file imports each package the files it brings along
import, so that a missing one is named there (tests/conversion/test_export_requirements.py).
"""
import ast
import sys
from typing import Dict, Iterable, List

# what every export needs; transformers 4.35.2, the oldest release its files are tested in
BASE_REQUIREMENTS = ("torch", "transformers>=4.35.2")
# distribution names of imported modules whose names differ
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "yaml": "pyyaml"}


def imported_packages(sources: Dict[str, str]) -> List[str]:
    """The distributions the Python ``sources`` (file name -> text) import, torch and transformers left
    out (``BASE_REQUIREMENTS``), sorted."""
    modules = set()
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | {"torch", "transformers", "__future__"}
    return sorted(_DISTRIBUTIONS.get(module, module) for module in modules)


def pip_command(packages: Iterable[str]) -> str:
    """The pip command that installs what loading a directory whose files import ``packages`` needs."""
    return " ".join(["pip install", *(f'"{r}"' if ">" in r else r for r in BASE_REQUIREMENTS), *packages])
