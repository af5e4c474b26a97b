"""The project's own modules that an export ships beside its remote code, so
that the exported model or tokenizer runs them and not a copy of their logic.
Each is written verbatim except for its imports of this project's packages,
which become relative (an export is one flat directory).

- ``SEGATRON_XL_MODULES``: Segatron-XL's attention, distances, layers, layer
  stack and memory (torch only);
- ``TEXT_LAYOUT_MODULES``: raw text -> items with their paragraph / sentence /
  token indexes, exactly as ``segatron-preprocess`` binarizes (the standard
  library; NLTK's Punkt, sentencepiece or ``tokenizers`` when called);
- ``ENCODER_LAYOUT_MODULES``: SegaBERT's [CLS] / [SEP] layout and the index
  tables' rule (numpy);
- ``GENERATION_MODULES``: the starts of tokens that arrive one at a time.
"""
import os
import re
from typing import Dict, Iterable

import segatron_preprocess

_PLUGIN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DIRECTORIES = {"modules": os.path.join(_PLUGIN_DIR, "modules"), "segments": os.path.join(_PLUGIN_DIR, "segments"),
                "preprocess": os.path.dirname(os.path.abspath(segatron_preprocess.__file__))}
SEGATRON_XL_MODULES = ("segment_distances.py", "segment_relative_attention.py", "segatron_xl_layer.py",
                       "segatron_xl_stack.py", "segment_memory.py")
TEXT_LAYOUT_MODULES = ("units.py", "document_items.py", "indexer.py", "sentences.py", "subwords.py", "atomic.py",
                       "corpus_format.py", "errors.py")
ENCODER_LAYOUT_MODULES = ("layout.py", "levels.py")
GENERATION_MODULES = ("generation_indexer.py",)
_HOMES = {**{name: "modules" for name in SEGATRON_XL_MODULES},
          **{name: "preprocess" for name in TEXT_LAYOUT_MODULES + GENERATION_MODULES},
          **{name: "segments" for name in ENCODER_LAYOUT_MODULES}}
_PROJECT_IMPORT = re.compile(r"^from (?:segatron_preprocess|segatron_fairseq\.segments)\.(\w+) import", re.MULTILINE)


def shipped_source(name: str) -> str:
    """The text of module ``name`` as shipped: its project imports made relative."""
    with open(os.path.join(_DIRECTORIES[_HOMES[name]], name), encoding="utf-8") as f:
        return _PROJECT_IMPORT.sub(r"from .\1 import", f.read())


def shipped_files(names: Iterable[str]) -> Dict[str, str]:
    """File name -> text of each of ``names``."""
    return {name: shipped_source(name) for name in names}
