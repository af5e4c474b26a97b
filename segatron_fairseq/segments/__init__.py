"""The segment layout of the plugin's inputs, in one place below the modules,
datasets, models and tasks: the levels and their order, the index tables and
the one rule that fits indexes into them (``levels``), the [CLS] / [SEP]
layout of an encoder input (``layout``) and the symbols fine-tuning appends
(``symbols``).
It imports numpy and the on-disk format only."""
from .layout import (
    Layout,
    ParagraphsLayout,
    Text,
    layout_of_paragraphs,
    layout_of_run,
    layout_of_texts,
    shorten_longest,
)
from .levels import LEVELS, SEGMENT_LEVELS, TABLE_SIZES, fit_to_table
from .symbols import MASK_SYMBOL, SEP_SYMBOL

__all__ = [
    "LEVELS",
    "Layout",
    "MASK_SYMBOL",
    "ParagraphsLayout",
    "SEGMENT_LEVELS",
    "SEP_SYMBOL",
    "TABLE_SIZES",
    "Text",
    "layout_of_texts",
    "layout_of_run",
    "fit_to_table",
    "layout_of_paragraphs",
    "shorten_longest",
]
