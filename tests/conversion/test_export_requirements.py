"""What loading an export needs: the packages its Python files import (``requirements``), named by transformers'
own check of remote code before anything runs, in 4.35.2 and in the newest release, and listed by the model card."""
import os
import shutil

import pytest

from segatron_fairseq.conversion.exporters import huggingface_directory, huggingface_segatron_xl
from segatron_fairseq.conversion.exporters.requirements import imported_packages, pip_command
from segatron_fairseq.conversion.exporters.shipped_code import (
    ENCODER_LAYOUT_MODULES,
    GENERATION_MODULES,
    SEGATRON_XL_MODULES,
    TEXT_LAYOUT_MODULES,
    shipped_files,
)


def test_imports_in_functions_count_and_relative_and_standard_library_imports_do_not():
    sources = {"a.py": "import os, json\nimport numpy as np\nfrom .b import f\nfrom sklearn.metrics import f1_score\n",
               "b.py": "from __future__ import annotations\ndef f():\n    import nltk.data\n    from torch import nn\n"
                       "    import transformers\n"}
    assert imported_packages(sources) == ["nltk", "numpy", "scikit-learn"]
    assert pip_command(["nltk"]) == 'pip install torch "transformers>=4.35.2" nltk'
    assert pip_command([]) == 'pip install torch "transformers>=4.35.2"'


def _remote_code_directory(tmp_path, code, modules) -> None:
    """``tmp_path``: the remote-code files ``code`` (paths) and the project's ``modules`` shipped beside them."""
    for path in code:
        shutil.copyfile(path, tmp_path / os.path.basename(path))
    for name, text in shipped_files(modules).items():
        (tmp_path / name).write_text(text, encoding="utf-8")


_TEXT = TEXT_LAYOUT_MODULES + ENCODER_LAYOUT_MODULES
_SEGATRON_XL_CODE = [os.path.join(huggingface_segatron_xl.REMOTE_CODE_DIR, name)
                     for name in huggingface_segatron_xl.REMOTE_CODE_FILES]


@pytest.mark.parametrize("entry, code, modules", [
    ("tokenization_segment_indexes.py", [huggingface_directory.INDEX_TOKENIZER_CODE], _TEXT),
    ("modeling_segatron_xl.py", [huggingface_directory.INDEX_TOKENIZER_CODE, *_SEGATRON_XL_CODE],
     SEGATRON_XL_MODULES + GENERATION_MODULES + _TEXT),
])
def test_the_file_transformers_checks_imports_every_package_its_modules_import(tmp_path, entry, code, modules):
    """transformers (4.35.2 here) checks the imports of the file ``auto_map`` names, not of the files it brings
    along: that file imports every package of its whole closure that transformers does not itself require, so a
    missing one is named before anything runs."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement
    from transformers.dynamic_module_utils import get_imports, get_relative_import_files

    _remote_code_directory(tmp_path, code, modules)
    entry_file = str(tmp_path / entry)
    closure = [entry_file, *get_relative_import_files(entry_file)]
    sources = {path: open(path, encoding="utf-8").read() for path in closure}
    assert len(closure) >= len(modules) and {"nltk", "sentencepiece"} <= set(imported_packages(sources))
    transformers_requires = {Requirement(text).name for text in requires("transformers") if "extra ==" not in text}
    assert {"numpy", "tokenizers"} <= transformers_requires
    assert set(imported_packages(sources)) - transformers_requires <= set(get_imports(entry_file))
