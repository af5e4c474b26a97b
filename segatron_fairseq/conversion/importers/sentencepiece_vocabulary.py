"""A sentencepiece model's pieces (ALBERT's and XLNet's ``spiece.model``), read
as a vocabulary in id order for the importers' fairseq dictionaries."""
from typing import List


def read_sentencepiece_vocab(path: str) -> List[str]:
    """The pieces of the sentencepiece model at ``path`` in id order."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(path)
    except (OSError, RuntimeError) as err:
        raise ValueError(f"{path}: not a sentencepiece model ({err})") from None
    return [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
