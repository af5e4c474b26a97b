"""Windows of a CoNLL document for token labelling, in SegaBERT's layout.

Each word is encoded with the model's sub-words; its label goes to its first
sub-word (the others are never scored). A document's sentences are packed
whole, in order, into windows of at most ``max_positions`` tokens
``[CLS] sentences [SEP]``; a sentence longer than a window is cut between
words (a word longer than a window keeps its first pieces). Every word is in
exactly one window. Indexes (``data/conll.py``): paragraph 0, each sentence
its number in the document, each sub-word its position in its sentence (a
window that starts mid-sentence starts at that token's index); [CLS] and
[SEP] take their neighbour's (``segments.layout_of_texts``). Example, a document
of two sentences "A b ." and "C d ." (whitespace words) after another one:

    token     [CLS] A  b  .  C  d  .  [SEP]
    paragraph   0   0  0  0  0  0  0    0
    sentence    0   0  0  0  1  1  1    1
    token       0   0  1  2  0  1  2    2
    labelled        *  *  *  *  *  *

With ``from_window_start`` (a model whose pre-training inputs count their
indexes from their first token: the cloze model) each window counts them
from its own first token instead (``cloze_blocks.from_block_start``).
"""
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import torch
from fairseq.data import data_utils

from segatron_fairseq.segments import Text, layout_of_texts
from segatron_preprocess.corpus_format import INDEX_NAMES

from .cloze_blocks import from_block_start
from .example_list_dataset import ExampleListDataset, segment_net_input

NO_LABEL = -1  # the target of a word without a (known) label, and of padding


@dataclass
class TokenWindow:
    """One model input (T,) each, and its words: the position of each word's
    first sub-word, its label index (``NO_LABEL`` when unknown) and
    (sentence number in the file, word number in the sentence)."""

    tokens: List[int]
    paragraph: List[int]
    sentence: List[int]
    token: List[int]
    token_type: List[int]
    word_positions: List[int]
    targets: List[int]
    words: List[Tuple[int, int]]


@dataclass
class EncodedSentence:
    """A sentence's words as sub-word ids, with its labels and its number in the file."""

    pieces: List[List[int]]
    targets: List[int]
    number: int


def _runs(sentence: EncodedSentence, room: int) -> List[Tuple[int, int]]:
    """(first, end) words of the runs a sentence is cut into, at most ``room`` pieces each."""
    runs, start, size = [], 0, 0
    for k, pieces in enumerate(sentence.pieces):
        length = min(len(pieces), room)
        if size + length > room:
            runs.append((start, k))
            start, size = k, 0
        size += length
    runs.append((start, len(sentence.pieces)))
    return runs


def document_windows(sentences: Sequence[EncodedSentence], bos: int, eos: int, max_positions: int,
                     table_sizes: dict, from_window_start: bool = False) -> List[TokenWindow]:
    """The windows of one document's sentences (see the module doc)."""
    room = max_positions - 2
    if room < 1:
        raise ValueError(f"--max-positions {max_positions}: a window needs at least 3 positions ([CLS] word [SEP])")
    windows, current, used = [], [], 0  # current: (sentence number in document, first word, end word)

    def flush():
        nonlocal used
        if current:
            windows.append(_window(sentences, current, room, bos, eos, table_sizes, from_window_start))
            current.clear()
            used = 0

    for number, sentence in enumerate(sentences):
        for first, end in _runs(sentence, room):
            size = sum(min(len(p), room) for p in sentence.pieces[first:end])
            if used + size > room:
                flush()
            current.append((number, first, end))
            used += size
    flush()
    return windows


def _window(sentences: Sequence[EncodedSentence], runs, room: int, bos: int, eos: int,
            table_sizes: dict, from_window_start: bool) -> TokenWindow:
    ids, sentence_index, token_index = [], [], []
    word_positions, targets, words = [], [], []
    for number, first, end in runs:
        sentence = sentences[number]
        position = sum(min(len(p), room) for p in sentence.pieces[:first])
        for k in range(first, end):
            pieces = sentence.pieces[k][:room]
            word_positions.append(1 + len(ids))  # after [CLS]
            targets.append(sentence.targets[k])
            words.append((sentence.number, k))
            ids += pieces
            sentence_index += [number] * len(pieces)
            token_index += range(position, position + len(pieces))
            position += len(pieces)
    indexes = {"paragraph": [0] * len(ids), "sentence": sentence_index, "token": token_index}
    if from_window_start:
        indexes = from_block_start(indexes)
    layout = layout_of_texts([Text(ids, indexes)], bos, eos, table_sizes)
    return TokenWindow(layout.tokens.tolist(), *(layout.indexes[name].tolist() for name in INDEX_NAMES),
                       layout.token_type.tolist(), word_positions, targets, words)


class TokenWindowDataset(ExampleListDataset):
    """Windows of a split. A batch has ``net_input``, ``word_positions`` (B, W;
    0 past a window's words), ``word_mask`` (B, W), ``target`` (B, W;
    ``NO_LABEL`` past its words) and ``words`` (each window's list of
    (sentence, word) numbers)."""

    def __init__(self, windows: List[TokenWindow], pad: int):
        super().__init__([len(w.tokens) for w in windows])
        self.windows, self.pad = windows, pad

    def collater(self, indices):
        if not indices:
            return {}
        windows = [self.windows[i] for i in indices]
        net_input = segment_net_input(*([getattr(w, name) for w in windows]
                                        for name in ("tokens", "paragraph", "sentence", "token", "token_type")),
                                      self.pad)
        positions = data_utils.collate_tokens([torch.tensor(w.word_positions) for w in windows], 0)
        mask = data_utils.collate_tokens([torch.ones(len(w.word_positions), dtype=torch.bool) for w in windows],
                                         False)
        return {
            "id": torch.tensor(indices),
            "nsentences": len(windows),
            "ntokens": int(net_input["src_tokens"].ne(self.pad).sum()),
            "net_input": net_input,
            "word_positions": positions,
            "word_mask": mask,
            "target": data_utils.collate_tokens([torch.tensor(w.targets) for w in windows], NO_LABEL),
            "words": [w.words for w in windows],
        }
