"""CoNLL-2003 files: one word per line, its columns separated by white space
(``token POS chunk NER`` in CoNLL-2003; the first column is the word, the last
its label), a blank line after each sentence, and a ``-DOCSTART-`` line
starting each document (news article). A file of one column holds words
alone (input to ``segatron-predict ner``).

Segment indexes: each document is one paragraph (index 0, the file has no
paragraph breaks inside an article); its sentences are numbered from 0 in the
document and a word's sub-words from 0 in its sentence, as in pre-training.
The lines before the first ``-DOCSTART-`` (all of a file without one) form a
document of their own.

Every line keeps its text, so predictions are written as the input lines with
the predicted label appended (conlleval's input: ``token POS chunk gold
predicted``); a ``-DOCSTART-`` line gets ``O``.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

DOCSTART = "-DOCSTART-"


@dataclass(frozen=True)
class ConllSentence:
    words: Tuple[str, ...]
    labels: Optional[Tuple[str, ...]]  # the last column; None in a file of words alone
    lines: Tuple[int, ...]  # line number (from 1) of each word


@dataclass(frozen=True)
class ConllFile:
    path: str
    documents: Tuple[Tuple[ConllSentence, ...], ...]
    columns: int
    lines: Tuple[str, ...]  # the file's lines, without line ends

    @property
    def labelled(self) -> bool:
        return self.columns > 1

    @property
    def sentences(self) -> List[ConllSentence]:
        """Every sentence, in file order (the numbering of ``TokenWindow.words``)."""
        return [sentence for document in self.documents for sentence in document]


def read_conll(path: str) -> ConllFile:
    """The documents of the CoNLL file ``path``; a malformed file raises
    ValueError naming the file and the line."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: CoNLL file not found") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text (byte {err.start})") from None
    # lines end at \n only (str.splitlines also breaks at \x85, \u2028, form feeds, ... which may be in a token)
    lines = tuple(line[:-1] if line.endswith("\r") else line for line in text.split("\n"))
    if lines and not lines[-1]:
        lines = lines[:-1]
    documents: List[Tuple[ConllSentence, ...]] = []
    document: List[ConllSentence] = []
    words: List[Tuple[int, List[str]]] = []
    columns = None

    def end_sentence():
        if words:
            labels = tuple(c[-1] for _, c in words) if columns > 1 else None
            document.append(ConllSentence(tuple(c[0] for _, c in words), labels, tuple(n for n, _ in words)))
            words.clear()

    def end_document():
        end_sentence()
        if document:
            documents.append(tuple(document))
            document.clear()

    for number, line in enumerate(lines, start=1):
        fields = line.replace("\t", " ").split(" ")  # columns apart by spaces or tabs, not other whitespace
        fields = [field for field in fields if field]
        if not fields:
            end_sentence()
        elif fields[0] == DOCSTART:
            end_document()
        else:
            if columns is None:
                columns = len(fields)
            elif len(fields) != columns:
                raise ValueError(f"{path}:{number}: {len(fields)} columns, the file's first word line has {columns} "
                                 f"(CoNLL: token POS chunk NER, separated by spaces)")
            words.append((number, fields))
    end_document()
    if not documents:
        raise ValueError(f"{path}: no sentences (a CoNLL file has one word per line, a blank line after each sentence)")
    return ConllFile(path, tuple(documents), columns, lines)


def conll_output(conll: ConllFile, predicted: Dict[int, str]) -> str:
    """The file's lines, each word line with its predicted label appended
    (``predicted``: line number -> label), a ``-DOCSTART-`` line with ``O``."""
    out = []
    for number, line in enumerate(conll.lines, start=1):
        fields = line.replace("\t", " ").split(" ")  # columns apart by spaces or tabs, not other whitespace
        fields = [field for field in fields if field]
        if not fields:
            out.append("")
        elif fields[0] == DOCSTART:
            out.append(" ".join(fields + ["O"]))
        else:
            out.append(" ".join(fields + [predicted[number]]))
    return "\n".join(out) + "\n"
