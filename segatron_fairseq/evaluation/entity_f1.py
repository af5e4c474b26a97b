"""Span (entity-level) precision, recall and F1 of labelled words, by
``seqeval`` in its default mode: the CoNLL convention of conlleval (IOB1 and
IOB2 tags; an ``I-`` after ``O`` or after another type starts an entity; an
entity counts only when its type and both ends match). Micro-averaged over
every entity of every sentence, in percent."""
from collections import defaultdict
from typing import Dict, Iterable, List, Sequence, Tuple

LabelledWord = Tuple[int, int, str, str]  # (sentence number, word number, gold label, predicted label)


def entity_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> Dict[str, float]:
    """``precision``, ``recall``, ``f1`` (percent) of the sentences' predicted labels against the gold ones."""
    from seqeval.metrics import f1_score, precision_score, recall_score

    gold, predicted = [list(s) for s in gold], [list(s) for s in predicted]
    # no entity predicted (or none in the gold labels): 0, as conlleval; Python floats (seqeval's are numpy's,
    # which a checkpoint's best_f1 must not hold: the checkpoint would not load with weights_only)
    return {name: 100 * float(score(gold, predicted, zero_division=0))
            for name, score in (("precision", precision_score), ("recall", recall_score), ("f1", f1_score))}


def sentences_of(words: Iterable[LabelledWord]) -> Tuple[List[List[str]], List[List[str]]]:
    """The gold and predicted label sequences of each sentence, from its words
    gathered in any order (a sentence cut between windows is joined again)."""
    by_sentence = defaultdict(dict)
    for sentence, word, gold, predicted in words:
        by_sentence[sentence][word] = (gold, predicted)
    gold_sentences, predicted_sentences = [], []
    for sentence in sorted(by_sentence):
        labels = [by_sentence[sentence][w] for w in sorted(by_sentence[sentence])]
        gold_sentences.append([g for g, _ in labels])
        predicted_sentences.append([p for _, p in labels])
    return gold_sentences, predicted_sentences
