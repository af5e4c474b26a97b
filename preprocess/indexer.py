"""Paragraph / sentence / token indexes of the items of one document stream.

Index semantics (all 0-based, per token, eos included):

- paragraph: the paragraph's number in its document. Every non-blank line is a
  paragraph: a WikiText title is paragraph 0, a section heading is a paragraph
  of one sentence.
- sentence: the sentence's number in its paragraph.
- token: the sub-word's number in its sentence.

The eos that ends an item continues the last sentence of its paragraph (token
index = that sentence's length). A blank line (WikiText) is an eos-only item
that continues the paragraph before it the same way, so blank lines add no
paragraph or sentence boundary. Blank lines before the first paragraph of a
document form its paragraph 0. So a document starts exactly where all three
indexes are 0.
"""
from typing import List, Tuple


class DocumentIndexer:
    def __init__(self):
        self.start_document()

    def start_document(self) -> None:
        self.paragraph = -1
        self.sentence = 0
        self.next_token = 0

    def paragraph_item(self, sentences: List[List[str]]) -> Tuple[List[int], List[int], List[int]]:
        """Indexes for a paragraph of ``sentences`` (lists of tokens) plus its eos."""
        self.paragraph += 1
        length = sum(len(s) for s in sentences) + 1
        sentence_index, token_index = [], []
        for number, tokens in enumerate(sentences):
            sentence_index.extend([number] * len(tokens))
            token_index.extend(range(len(tokens)))
        last = len(sentences) - 1 if sentences else 0
        eos_token = len(sentences[-1]) if sentences else 0
        sentence_index.append(last)
        token_index.append(eos_token)
        self.sentence, self.next_token = last, eos_token + 1
        return [self.paragraph] * length, sentence_index, token_index

    def blank_item(self) -> Tuple[List[int], List[int], List[int]]:
        """Indexes for a blank line's eos."""
        if self.paragraph < 0:
            self.paragraph = 0
        item = [self.paragraph], [self.sentence], [self.next_token]
        self.next_token += 1
        return item
