"""The segment layout's one home (segatron_fairseq.segments): level order, tables, the fitting rule and the
[CLS] / [SEP] builder, on examples worked out by hand."""
import ast
import pathlib

import numpy as np

from segatron_fairseq.segments import (
    LEVELS,
    MASK_SYMBOL,
    SEGMENT_LEVELS,
    TABLE_SIZES,
    Text,
    fit_to_table,
    layout_of_paragraphs,
    layout_of_texts,
    shorten_longest,
)
from segatron_preprocess.corpus_format import INDEX_NAMES

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "segatron_fairseq"
BOS, EOS = 0, 2


def _text(ids, paragraph, sentence, token):
    return Text(ids, {"paragraph": paragraph, "sentence": sentence, "token": token})


def test_levels_tables_and_mask_symbol():
    assert LEVELS == ("token", "sentence", "paragraph")
    assert SEGMENT_LEVELS == ("sentence", "paragraph")
    assert tuple(TABLE_SIZES) == INDEX_NAMES == ("paragraph", "sentence", "token")
    assert TABLE_SIZES == {"paragraph": 50, "sentence": 100, "token": 256}
    assert MASK_SYMBOL == "<mask>"


def test_fitting_shifts_then_clips():
    values, shifted, clipped = fit_to_table(np.array([3, 4, 5]), 4)  # shift 2 (5 - 3), never below 0: 3 - 2 = 1
    assert values.tolist() == [1, 2, 3] and shifted and not clipped
    values, shifted, clipped = fit_to_table(np.array([1, 9]), 4)  # shift 1 (min), then 8 > 3: clipped
    assert values.tolist() == [0, 3] and shifted and clipped
    values, shifted, clipped = fit_to_table(np.array([0, 2, 7]), 4)  # a 0 cannot move: clip only
    assert values.tolist() == [0, 2, 3] and not shifted and clipped
    values, shifted, clipped = fit_to_table(np.array([], dtype=np.int64), 4)
    assert values.tolist() == [] and not shifted and not clipped


def test_two_texts_by_hand():
    """The module docstring's example: 'who ?' then 'A b . C d .' (paragraph 1, two sentences)."""
    question = _text([10, 11], [0, 0], [0, 0], [0, 1])
    context = _text([20, 21, 22, 23, 24, 25], [1] * 6, [0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2])
    layout = layout_of_texts([question, context], BOS, EOS, TABLE_SIZES)
    assert layout.tokens.tolist() == [0, 10, 11, 2, 20, 21, 22, 23, 24, 25, 2]
    assert list(layout.indexes) == ["paragraph", "sentence", "token"]
    assert layout.indexes["paragraph"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert layout.indexes["sentence"].tolist() == [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert layout.indexes["token"].tolist() == [0, 0, 1, 1, 0, 1, 2, 0, 1, 2, 2]
    assert layout.token_type.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert not layout.shifted and not layout.clipped
    assert all(v.dtype == np.int64 for v in (layout.tokens, layout.token_type, *layout.indexes.values()))


def test_one_text_mid_document_is_shifted_into_the_tables():
    """A pre-training example from paragraph 60 on (tables of 4 rows here): [CLS] and [SEP] copy the
    first / last token before the fit, then the whole column moves down together."""
    text = _text([5, 6, 7], [6, 6, 7], [2, 3, 0], [0, 0, 0])
    layout = layout_of_texts([text], BOS, EOS, {"paragraph": 4, "sentence": 4, "token": 4})
    assert layout.tokens.tolist() == [0, 5, 6, 7, 2]
    assert layout.indexes["paragraph"].tolist() == [2, 2, 2, 3, 3]  # 6 6 6 7 7 shifted by 4
    assert layout.indexes["sentence"].tolist() == [2, 2, 3, 0, 0]  # fits as it is
    assert layout.token_type.tolist() == [0] * 5
    assert layout.shifted and not layout.clipped


def test_empty_texts_take_their_neighbours():
    """An empty first text: [CLS] 0; an empty later text: its [SEP] copies the [SEP] before it."""
    layout = layout_of_texts([_text([], [], [], []), _text([7], [1], [0], [3])], BOS, EOS, TABLE_SIZES)
    assert layout.tokens.tolist() == [0, 2, 7, 2]
    assert layout.indexes["paragraph"].tolist() == [0, 0, 1, 1]
    assert layout.indexes["token"].tolist() == [0, 0, 3, 3]
    assert layout.token_type.tolist() == [0, 0, 1, 1]
    layout = layout_of_texts([_text([7], [0], [0], [0]), _text([], [], [], [])], BOS, EOS, TABLE_SIZES)
    assert layout.indexes["paragraph"].tolist() == [0, 0, 0, 0] and layout.token_type.tolist() == [0, 0, 0, 0]


def test_shorten_longest_drops_ends_of_the_longest_first():
    assert shorten_longest([[1, 2, 3, 4], [5, 6]], 4) == [[1, 2], [5, 6]]
    assert shorten_longest([[1, 2, 3], [4, 5, 6]], 4) == [[1, 2], [4, 5]]  # ties: the first one first
    assert shorten_longest([[1], [2]], 5) == [[1], [2]]


def test_the_exported_remote_code_names_the_levels_as_the_corpus_does():
    """hf_segabert/ runs without this package (transformers imports it from an export), so it spells the
    level names itself: they must stay the corpus's."""
    remote = next(PACKAGE.rglob("hf_segabert/modeling_segabert.py"))
    for node in ast.parse(remote.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "INDEX_NAMES":
            assert ast.literal_eval(node.value) == INDEX_NAMES
            break
    else:
        raise AssertionError(f"{remote} defines no INDEX_NAMES")


def test_segment_distances_spells_the_segment_levels_as_the_layout_does():
    """modules/segment_distances.py is shipped as remote code of the Segatron-XL export, so it spells the levels
    whose starts Segatron-XL counts itself; they must be these."""
    from segatron_fairseq.modules import segment_distances

    assert segment_distances.SEGMENT_LEVELS == SEGMENT_LEVELS


def test_layout_of_paragraphs_is_layout_of_texts_one_paragraph_each():
    """Text k is paragraph k of one sentence, tokens counted from its start; the columns come back by name."""
    layout = layout_of_paragraphs([[7, 8], [9]], BOS, EOS, 512, 256)
    expected = layout_of_texts([_text([7, 8], [0, 0], [0, 0], [0, 1]), _text([9], [1], [0], [0])], BOS, EOS,
                               TABLE_SIZES)
    assert layout.tokens == expected.tokens.tolist() == [BOS, 7, 8, EOS, 9, EOS]
    for level in ("paragraph", "sentence", "token"):
        assert getattr(layout, level) == expected.indexes[level].tolist(), level
