"""Sentence and paragraph starts read from the segment indexes: the module's worked example, padding, and a
layout of the fine-tuning tasks against the starts by hand."""
import torch

from segatron_fairseq.modules.index_boundaries import index_boundaries
from segatron_fairseq.segments import TABLE_SIZES, Text, layout_of_texts


def _indexes(paragraph, sentence, token):
    return {"paragraph": torch.tensor([paragraph]), "sentence": torch.tensor([sentence]),
            "token": torch.tensor([token])}


def test_the_worked_example():
    boundaries = index_boundaries(_indexes([0, 0, 0, 0, 0, 1, 1, 1], [0] * 8, [0, 0, 1, 2, 2, 0, 1, 1]), None)
    assert boundaries.copy[0].nonzero().flatten().tolist() == [1, 4, 7]
    assert boundaries.sentence_start[0].nonzero().flatten().tolist() == [5]
    assert boundaries.paragraph_start[0].nonzero().flatten().tolist() == [5]
    assert boundaries.real.all()


def test_padding_starts_nothing():
    padding = torch.tensor([[False] * 4 + [True] * 3])
    boundaries = index_boundaries(_indexes([0, 0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 1, 0, 0, 0]),
                                  padding)
    assert boundaries.sentence_start[0].tolist() == [False, False, True, False, False, False, False]
    assert boundaries.real[0].tolist() == [True] * 4 + [False] * 3


def test_a_layout_of_paragraphs_and_sentences():
    """[CLS] q q [SEP] c c . c . [SEP] with the context's two paragraphs, the second of two sentences: sentence
    starts at the second text's sentences, paragraph starts where its paragraphs begin."""
    texts = [Text([5, 6], {"paragraph": [0, 0], "sentence": [0, 0], "token": [0, 1]}),
             Text([7, 8, 9, 10, 11, 12], {"paragraph": [1, 1, 2, 2, 2, 2], "sentence": [0, 0, 0, 0, 1, 1],
                                          "token": [0, 1, 0, 1, 0, 1]})]
    layout = layout_of_texts(texts, 0, 2, TABLE_SIZES)
    assert layout.tokens.tolist() == [0, 5, 6, 2, 7, 8, 9, 10, 11, 12, 2]
    boundaries = index_boundaries({level: torch.from_numpy(index)[None] for level, index in layout.indexes.items()},
                                  None)
    assert boundaries.sentence_start[0].nonzero().flatten().tolist() == [4, 6, 8]
    assert boundaries.paragraph_start[0].nonzero().flatten().tolist() == [4, 6]
    assert boundaries.copy[0].nonzero().flatten().tolist() == [1, 3, 10]


def test_a_window_that_begins_its_context_inside_a_paragraph():
    """SQuAD windows after the first: [CLS] q q q [SEP] then the context from its paragraph 1's sentence 1, token 3
    on (the question's length): the context's first token starts a sentence and a paragraph all the same."""
    paragraph = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    sentence = [0, 0, 0, 0, 0, 1, 1, 2, 2, 2]
    token = [0, 0, 1, 2, 2, 3, 4, 0, 1, 1]
    boundaries = index_boundaries(_indexes(paragraph, sentence, token), None)
    assert boundaries.sentence_start[0].nonzero().flatten().tolist() == [5, 7]
    assert boundaries.paragraph_start[0].nonzero().flatten().tolist() == [5]
    assert boundaries.copy[0].nonzero().flatten().tolist() == [1, 4, 9]
