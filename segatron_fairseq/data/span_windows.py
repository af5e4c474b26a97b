"""Question + context windows for extractive QA, in SegaBERT's layout.

A context is tokenized word by word (white space), keeping each token's
character span, so an answer maps to tokens and a predicted token span maps
back to the exact context text. Its lines are paragraphs, numbered from
``first_paragraph``; sentences come from the pre-training corpus's splitter
(the binarizer's ``sentence_numbers``) and count from 0 in each paragraph;
token indexes count from 0 in each sentence.

A window is [CLS] question [SEP] context[a:b] [SEP]; the question (cut to
``max_query_tokens``) is paragraph 0, sentence 0, token indexes 0..; the
context keeps its own indexes (a window that starts mid-sentence starts at
that token's index); [CLS] and [SEP] take their left neighbour's indexes
([CLS]: the first question token's; ``segments.layout_of_texts``). Token type: 0
up to the first [SEP], 1 after. Example, question "who ?", context "A b . C d .\\nE f ." (whitespace
words, stride large enough for one window):

    token     [CLS] who ?  [SEP] A  b  .  C  d  .  E  f  .  [SEP]
    paragraph   0    0  0    0   1  1  1  1  1  1  2  2  2    2
    sentence    0    0  0    0   0  0  0  1  1  1  0  0  0    0
    token       0    0  1    1   0  1  2  0  1  2  0  1  2    2
    type        0    0  0    0   1  1  1  1  1  1  1  1  1    1

Long contexts are cut into windows of at most ``max_positions`` tokens that
start ``doc_stride`` context tokens apart (BERT's reading-comprehension
windows). A token seen by several windows is scored only in the one where it
has the most context on both sides (``max_context_windows``), so an answer that
crosses one window's edge is found in the next.
"""
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from fairseq.data import data_utils

from segatron_fairseq.segments import Text, layout_of_texts
from segatron_preprocess import sentences
from segatron_preprocess.corpus_format import INDEX_NAMES

from .example_list_dataset import ExampleListDataset, segment_net_input


@dataclass
class TokenizedText:
    """Tokens of a text with their indexes and character spans, (N,) each."""

    ids: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]
    char_start: List[int]
    char_end: List[int]  # exclusive

    def text(self, start: int = 0, end: Optional[int] = None) -> Text:
        """Tokens ``start:end`` as a text of ``segments.layout_of_texts``."""
        return Text(self.ids[start:end], {"paragraph": self.paragraph[start:end],
                                          "sentence": self.sentence[start:end], "token": self.token[start:end]})


def piece_spans(pieces: Sequence[str], start: int, end: int) -> List[Tuple[int, int]]:
    """Character spans of the sub-word ``pieces`` of the word at [start, end):
    consecutive when the pieces, markers stripped, add up to the word's length;
    else (a normaliser changed it) each piece spans the whole word."""
    # markers: WordPiece's "##" continuation, sentencepiece's "\u2581" word start
    lengths = [len(p[2:] if p.startswith("##") else p.lstrip("\u2581")) for p in pieces]
    if sum(lengths) != end - start or not pieces:
        return [(start, end)] * len(pieces)
    spans, position = [], start
    for length in lengths:
        spans.append((position, position + length))
        position += length
    return spans


def tokenize_context(text: str, encode_word: Callable[[str], List[str]], to_id: Callable[[str], int], splitter,
                     first_paragraph: int) -> TokenizedText:
    """``text``'s tokens, one paragraph per non-blank line (see the module doc)."""
    out = TokenizedText([], [], [], [], [], [])
    paragraph = first_paragraph
    line_start = 0
    for line in text.split("\n"):
        words = [(m.group(), line_start + m.start(), line_start + m.end()) for m in re.finditer(r"\S+", line)]
        line_start += len(line) + 1
        if not words:
            continue
        numbers = sentences.sentence_numbers(splitter, [w for w, _, _ in words]) if splitter else [0] * len(words)
        current, position = 0, 0
        for (word, start, end), number in zip(words, numbers):
            if number != current:
                current, position = number, 0
            pieces = encode_word(word)
            for piece, (a, b) in zip(pieces, piece_spans(pieces, start, end)):
                out.ids.append(to_id(piece))
                out.paragraph.append(paragraph)
                out.sentence.append(number)
                out.token.append(position)
                out.char_start.append(a)
                out.char_end.append(b)
                position += 1
        paragraph += 1
    return out


class ContextTokenizer:
    """``tokenize_context`` with a pre-training corpus's sub-words and sentence
    splitter (``segatron_preprocess.text_encoder``) and the model's dictionary."""

    def __init__(self, corpus_dir: str, dictionary):
        from segatron_preprocess.text_encoder import TextEncoder

        segmenter = TextEncoder(corpus_dir, dictionary).segmenter
        self.subwords, self.splitter, self.dictionary = segmenter.subwords, segmenter.splitter, dictionary

    def __call__(self, text: str, first_paragraph: int) -> TokenizedText:
        return tokenize_context(text, self.subwords.encode, self.dictionary.index, self.splitter, first_paragraph)


def answer_tokens(context: TokenizedText, start: int, end: int) -> Optional[Tuple[int, int]]:
    """First and last token overlapping characters [start, end) of the context, or None."""
    inside = [k for k, (a, b) in enumerate(zip(context.char_start, context.char_end)) if a < end and b > start]
    return (inside[0], inside[-1]) if inside else None


def window_starts(length: int, room: int, stride: int) -> List[Tuple[int, int]]:
    """(start, end) of the windows over ``length`` context tokens, ``room`` at most each."""
    spans, start = [], 0
    while True:
        end = min(length, start + room)
        spans.append((start, end))
        if end == length:
            return spans
        start += min(end - start, stride)


def max_context_windows(spans: List[Tuple[int, int]], length: int) -> List[int]:
    """For each of ``length`` context tokens, the window of ``spans`` where it
    has the most context (min of left and right; ties to the longer window, then the first)."""
    best = [-1] * length
    best_score = [float("-inf")] * length
    for k, (start, end) in enumerate(spans):
        for position in range(start, end):
            score = min(position - start, end - 1 - position) + 0.01 * (end - start)
            if score > best_score[position]:
                best[position], best_score[position] = k, score
    return best


@dataclass
class SpanWindow:
    """One model input: tokens and indexes (T,), the answer's token positions
    ((0, 0): [CLS], no answer in this window), and for decoding each position's
    character span in the context ((-1, -1) outside it) and whether an answer
    may start there (context token with its max context here)."""

    question: int  # number of the question in the task's list
    tokens: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]
    token_type: List[int]
    start_position: int
    end_position: int
    char_start: List[int]
    char_end: List[int]
    may_start: List[bool]


def question_windows(number: int, question: List[int], context: TokenizedText, answer: Optional[Tuple[int, int]],
                     bos: int, eos: int, max_positions: int, doc_stride: int, max_query_tokens: int,
                     table_sizes: dict) -> List[SpanWindow]:
    """The windows of one question (``answer``: its first and last context
    token, or None when it has none), indexes fitted to ``table_sizes``."""
    question = question[:max_query_tokens]
    room = max_positions - len(question) - 3
    if room < 1:
        raise ValueError(f"max_positions {max_positions} leaves no room for the context after a "
                         f"{len(question)}-token question")
    spans = window_starts(len(context.ids), room, doc_stride)
    scored_in = max_context_windows(spans, len(context.ids))
    query = Text(question, {"paragraph": [0] * len(question), "sentence": [0] * len(question),
                            "token": range(len(question))})
    head = len(question) + 2
    outside = [-1] * head
    windows = []
    for k, (start, end) in enumerate(spans):
        layout = layout_of_texts([query, context.text(start, end)], bos, eos, table_sizes)
        start_position = end_position = 0
        if answer is not None and start <= answer[0] and answer[1] < end:
            start_position, end_position = head + answer[0] - start, head + answer[1] - start
        windows.append(SpanWindow(
            number, layout.tokens.tolist(), *(layout.indexes[name].tolist() for name in INDEX_NAMES),
            layout.token_type.tolist(), start_position, end_position,
            outside + context.char_start[start:end] + [-1], outside + context.char_end[start:end] + [-1],
            [False] * head + [scored_in[p] == k for p in range(start, end)] + [False]))
    return windows


class SpanWindowDataset(ExampleListDataset):
    """Windows of a split; a batch also carries, for decoding, each window's
    question id, context and gold answers (Python lists)."""

    def __init__(self, windows: List[SpanWindow], questions, pad: int):
        super().__init__([len(w.tokens) for w in windows])
        self.windows, self.questions, self.pad = windows, questions, pad

    def collater(self, indices):
        if not indices:
            return {}
        windows = [self.windows[i] for i in indices]

        def pad(name, value):
            return data_utils.collate_tokens([torch.tensor(getattr(w, name)) for w in windows], value)

        net_input = segment_net_input(*([getattr(w, name) for w in windows]
                                        for name in ("tokens", "paragraph", "sentence", "token", "token_type")),
                                      self.pad)
        questions = [self.questions[w.question] for w in windows]
        return {
            "id": torch.tensor(indices),
            "nsentences": len(windows),
            "ntokens": int(net_input["src_tokens"].ne(self.pad).sum()),
            "net_input": net_input,
            "target": torch.tensor([[w.start_position, w.end_position] for w in windows]),
            "char_start": pad("char_start", -1),
            "char_end": pad("char_end", -1),
            "may_start": data_utils.collate_tokens([torch.tensor(w.may_start) for w in windows], False),
            "qid": [q.qid for q in questions],
            "context": [q.context for q in questions],
            "golds": [list(q.answers) for q in questions],
        }
