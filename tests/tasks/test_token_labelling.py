"""Token labelling (NER): the CoNLL reader, the windows' layout by hand, the heads, seqeval's span F1 on a
hand-made file, fine-tuning and prediction from each pre-trained kind."""
import random
import re

import pytest
import torch
from conftest import fairseq_train, pretrained_kind, quick_first, run_cli

from segatron_fairseq.data.conll import conll_output, read_conll
from segatron_fairseq.data.token_windows import NO_LABEL, EncodedSentence, TokenWindowDataset, document_windows
from segatron_fairseq.evaluation.entity_f1 import entity_scores, sentences_of
from segatron_fairseq.models.token_label_heads import TokenCRFHead, TokenLinearHead, word_features
from segatron_fairseq.segments import TABLE_SIZES
from segatron_fairseq.tasks.token_labelling import CONLL_2003_LABELS

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def test_reader_keeps_documents_sentences_and_lines(tmp_path):
    (tmp_path / "a.txt").write_text(CONLL)
    conll = read_conll(str(tmp_path / "a.txt"))
    assert conll.columns == 4 and conll.labelled
    assert [[s.words for s in d] for d in conll.documents] == [[("EU", "rejects", "German"), ("Peter", "Blackburn")],
                                                              [("BRUSSELS",)]]
    assert conll.documents[0][1].labels == ("B-PER", "I-PER") and conll.documents[0][1].lines == (7, 8)
    out = conll_output(conll, {3: "B-ORG", 4: "O", 5: "O", 7: "B-PER", 8: "O", 12: "B-LOC"})
    assert out.splitlines()[0] == "-DOCSTART- -X- -X- O O"
    assert out.splitlines()[6:8] == ["Peter NNP B-NP B-PER B-PER", "Blackburn NNP I-NP I-PER O"]
    (tmp_path / "words.txt").write_text("Peter\nBlackburn\n\nEU\n")  # no -DOCSTART-: one document
    words = read_conll(str(tmp_path / "words.txt"))
    assert not words.labelled and len(words.documents) == 1 and words.sentences[1].labels is None


@pytest.mark.parametrize("text, error", [
    ("EU NNP B-NP B-ORG\nrejects VBZ B-ORG\n", "{path}:2: 3 columns, the file's first word line has 4"),
    ("-DOCSTART- -X- -X- O\n\n\n", "{path}: no sentences"),
    (b"EU B-ORG\nrejects \xff\n", "{path}:2: not UTF-8 text (byte 17)"),
])
def test_reader_names_the_file_and_line(tmp_path, text, error):
    path = tmp_path / "bad.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError) as caught:
        read_conll(str(path))
    assert str(caught.value).startswith(error.format(path=path))
    with pytest.raises(FileNotFoundError, match="missing.txt: CoNLL file not found"):
        read_conll(str(tmp_path / "missing.txt"))


def test_reader_splits_lines_at_newlines_and_columns_at_spaces_and_tabs(tmp_path):
    """A token may hold other Unicode whitespace or line separators (\\x85, \\u2028, a no-break space): it stays
    one token, on its own line; Windows line ends are accepted."""
    path = tmp_path / "odd.txt"
    path.write_text("-DOCSTART- -X- -X- O\r\n\r\nA\u2028b NNP B-NP B-ORG\r\nc\xa0d\x85e NN\tI-NP O\r\n",
                    encoding="utf-8")
    conll = read_conll(str(path))
    (sentence,), = conll.documents
    assert sentence.words == ("A\u2028b", "c\xa0d\x85e") and sentence.labels == ("B-ORG", "O")
    assert sentence.lines == (3, 4)


def _sentence(number, lengths, first_id=10):
    """A sentence of words of ``lengths`` sub-words, ids counting from ``first_id``, labels 1, 2, ..."""
    ids = iter(range(first_id, first_id + sum(lengths)))
    return EncodedSentence([[next(ids) for _ in range(n)] for n in lengths], list(range(1, len(lengths) + 1)), number)


def test_windows_pack_whole_sentences_with_their_indexes():
    # a document of 3 sentences: 3 words of 1, 2, 1 pieces; 2 words of 1; 4 words of 1 (does not fit with the others)
    sentences = [_sentence(7, [1, 2, 1], 10), _sentence(8, [1, 1], 20), _sentence(9, [1, 1, 1, 1], 30)]
    first, second = document_windows(sentences, bos=0, eos=2, max_positions=8, table_sizes=TABLE_SIZES)
    assert first.tokens == [0, 10, 11, 12, 13, 20, 21, 2]
    assert first.paragraph == [0] * 8
    assert first.sentence == [0, 0, 0, 0, 0, 1, 1, 1]
    assert first.token == [0, 0, 1, 2, 3, 0, 1, 1]
    assert first.word_positions == [1, 2, 4, 5, 6]  # first sub-words only
    assert first.targets == [1, 2, 3, 1, 2] and first.words == [(7, 0), (7, 1), (7, 2), (8, 0), (8, 1)]
    assert second.tokens == [0, 30, 31, 32, 33, 2] and second.sentence == [2] * 6
    assert second.token == [0, 0, 1, 2, 3, 3] and second.words == [(9, k) for k in range(4)]


def test_windows_of_a_model_counting_from_its_input_start_count_from_each_window_start():
    """The cloze model's windows (its pre-training blocks count their indexes from their first token): the
    second window starts at sentence 0, a window that starts mid-sentence at token 0."""
    sentences = [_sentence(7, [1, 2, 1], 10), _sentence(8, [1, 1], 20), _sentence(9, [1, 1, 1, 1], 30)]
    first, second = document_windows(sentences, 0, 0, 8, TABLE_SIZES, from_window_start=True)
    assert first.sentence == [0, 0, 0, 0, 0, 1, 1, 1] and first.token == [0, 0, 1, 2, 3, 0, 1, 1]
    assert second.sentence == [0] * 6 and second.token == [0, 0, 1, 2, 3, 3]
    long = _sentence(0, [2, 2, 2, 6])
    windows = document_windows([long], 0, 0, 6, TABLE_SIZES, from_window_start=True)
    assert [w.token for w in windows] == [[0, 0, 1, 2, 3, 3], [0, 0, 1, 1], [0, 0, 1, 2, 3, 3]]


def test_a_long_sentence_is_cut_between_words_and_keeps_its_token_indexes():
    long = _sentence(0, [2, 2, 2, 6])  # 12 pieces, 4 to a window; the last word keeps its first 4
    windows = document_windows([long], bos=0, eos=2, max_positions=6, table_sizes=TABLE_SIZES)
    assert [w.tokens for w in windows] == [[0, 10, 11, 12, 13, 2], [0, 14, 15, 2], [0, 16, 17, 18, 19, 2]]
    assert [w.token for w in windows] == [[0, 0, 1, 2, 3, 3], [4, 4, 5, 5], [6, 6, 7, 8, 9, 9]]
    assert [w.words for w in windows] == [[(0, 0), (0, 1)], [(0, 2)], [(0, 3)]]  # each word once
    batch = TokenWindowDataset(windows, pad=1).collater([0, 1])
    assert batch["word_positions"].tolist() == [[1, 3], [1, 0]]
    assert batch["word_mask"].tolist() == [[True, True], [True, False]]
    assert batch["target"].tolist() == [[1, 2], [3, NO_LABEL]]


@pytest.mark.parametrize("head", [TokenLinearHead(8, 5, 0.0), TokenCRFHead(8, 5, 0.0, 6, 4)], ids=["linear", "crf"])
def test_heads_score_each_window_alone_whatever_the_padding(head):
    torch.manual_seed(0)
    head.eval()
    features = torch.randn(2, 7, 8)
    mask = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    target = torch.randint(0, 5, (2, 7)).masked_fill(~mask, NO_LABEL)
    together = head.loss(features, mask, target)
    alone = head.loss(features[1:, :3], mask[1:, :3], target[1:, :3]) + head.loss(features[:1], mask[:1], target[:1])
    assert together.item() == pytest.approx(alone.item(), rel=1e-5)
    paths = head.decode(features, mask)
    assert [len(p) for p in paths] == [7, 3] and paths[1] == head.decode(features[1:, :3], mask[1:, :3])[0]
    assert word_features(features, torch.tensor([[0, 2], [1, 0]]))[0, 1].equal(features[0, 2])


def test_the_crf_sums_in_float_when_its_parameters_are_half():
    from torchcrf import CRF

    from segatron_fairseq.models.token_label_heads import crf_log_likelihood

    torch.manual_seed(0)
    half = CRF(5, batch_first=True)
    half.transitions.data.normal_(std=2.0)
    half = half.half()
    exact = CRF(5, batch_first=True)
    exact.load_state_dict({k: v.float() for k, v in half.state_dict().items()})  # the same (rounded) values
    emissions = 50 + 3 * torch.randn(2, 300, 5)  # a long window: the gold path's score is near 15,000
    tags, mask = torch.randint(0, 5, (2, 300)), torch.ones(2, 300, dtype=torch.bool)
    expected = exact(emissions, tags, mask, reduction="sum")
    assert crf_log_likelihood(half, emissions, tags, mask).item() == pytest.approx(expected.item(), abs=1e-2)
    assert abs(half(emissions, tags, mask, reduction="sum").item() - expected.item()) > 0.1  # pytorch-crf's own


# token POS chunk gold predicted (IOB1, as CoNLL-2003); entities by hand:
#   gold: ORG EU, MISC German, MISC British | PER Peter Blackburn | LOC BRUSSELS | LOC Germany, LOC France  (7)
#   predicted: ORG EU, MISC German, LOC British | PER Peter | LOC BRUSSELS, MISC 1996-08-22 | LOC, LOC  (8)
#   right: EU, German, BRUSSELS, Germany, France (5): precision 5/8, recall 5/7, F1 2*5/(8+7) = 2/3
SCORED = """EU NNP I-NP I-ORG I-ORG
rejects VBZ I-VP O O
German JJ I-NP I-MISC I-MISC
call NN I-NP O O
British JJ I-NP I-MISC I-LOC
lamb NN I-NP O O

Peter NNP I-NP I-PER I-PER
Blackburn NNP I-NP I-PER O

BRUSSELS NNP I-NP I-LOC I-LOC
1996-08-22 CD I-NP O I-MISC

Germany NNP I-NP I-LOC I-LOC
France NNP I-NP B-LOC B-LOC
"""


def test_span_f1_of_a_hand_made_file_is_computed_by_hand(tmp_path):
    from seqeval.metrics import f1_score

    (tmp_path / "scored.txt").write_text(SCORED)
    conll = read_conll(str(tmp_path / "scored.txt"))
    columns = [line.split() for line in conll.lines]
    words = [(s, w, columns[line - 1][3], columns[line - 1][4])
             for s, sentence in enumerate(conll.sentences) for w, line in enumerate(sentence.lines)]
    random.Random(0).shuffle(words)  # windows come in any order
    gold, predicted = sentences_of(words)
    scores = entity_scores(gold, predicted)
    assert scores["precision"] == pytest.approx(100 * 5 / 8)
    assert scores["recall"] == pytest.approx(100 * 5 / 7)
    assert scores["f1"] == pytest.approx(100 * 2 / 3)
    assert all(type(value) is float for value in scores.values())  # a checkpoint's best_f1 loads with weights_only
    assert f1_score(gold, predicted) == pytest.approx(2 / 3)


NER_LABELS = {"Tom": "B-PER", "park": "B-LOC", "reef": "B-LOC", "cat": "B-MISC"}


def write_ner_file(path, documents: int, seed: int) -> None:
    """A CoNLL file of FINETUNING_WORDS: each document 3 sentences of 6 words, "red ball" a MISC entity."""
    rng = random.Random(seed)
    words = "the crab lives near a reef it hides under Tom has red ball plays in park His sister cat".split()
    lines = []
    for _ in range(documents):
        lines += ["-DOCSTART- -X- -X- O", ""]
        for _ in range(3):
            sentence = [rng.choice(words) for _ in range(6)]
            for k, word in enumerate(sentence):
                label = NER_LABELS.get(word, "O")
                if word == "red" and k + 1 < len(sentence):
                    sentence[k + 1] = "ball"
                    label = "B-MISC"
                elif word == "ball" and k and sentence[k - 1] == "red":
                    label = "I-MISC"
                lines.append(f"{word} NN B-NP {label}")
            lines.append("")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("kind, head", quick_first(("segabert", "bilstm_crf"), ("bert", "linear"), ("albert", "linear"),
                                                    ("electra", "bilstm_crf"), ("xlnet", "linear")))
def test_fine_tunes_and_predicts_with_each_pretrained_kind(tmp_path, kind, head, request, segabert_corpus):
    arch, options, checkpoint = pretrained_kind(request, kind)
    (tmp_path / "ner").mkdir()
    write_ner_file(tmp_path / "ner" / "train.txt", 6, seed=1)
    write_ner_file(tmp_path / "ner" / "valid.txt", 2, seed=2)
    out = fairseq_train(tmp_path / "ner", task="token_labelling", arch=arch, criterion="token_labelling",
                        save_dir=tmp_path / "ft",
                        extra=[*options, "--pretrain-data", segabert_corpus, "--restore-file", checkpoint,
                               "--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
                               "--token-head", head, "--max-positions", 32, "--batch-size", 4, "--max-update", 2,
                               "--no-epoch-checkpoints", "--log-format", "simple", "--best-checkpoint-metric", "f1",
                               "--maximize-best-checkpoint-metric"])
    assert "valid: 2 documents, 6 sentences" in out
    assert re.search(r"valid on 'valid' subset .*\| precision [0-9.]+ \| recall [0-9.]+ \| f1 [0-9.]+", out), \
        out[-2000:]
    # checkpoint_best.pt holds the best f1: a Python float, which loads with weights_only
    predicted = run_cli("segatron-predict", "ner", "--checkpoint", tmp_path / "ft" / "checkpoint_best.pt",
                        "--pretrain-data", segabert_corpus, "--input", tmp_path / "ner" / "valid.txt",
                        "--out", tmp_path / "valid.predicted", "--cpu")
    assert re.search(r"f1 [0-9.]+ \| precision [0-9.]+ \| recall [0-9.]+ \| sentences 6", predicted)
    lines = (tmp_path / "valid.predicted").read_text().splitlines()
    source = (tmp_path / "ner" / "valid.txt").read_text().splitlines()
    assert len(lines) == len(source)
    for line, given in zip(lines, source):
        assert line.split()[:-1] == given.split() and (not line or line.split()[-1] in CONLL_2003_LABELS.split(","))
    if kind == "segabert":  # a file of the words alone is labelled too, and not scored
        words = "\n".join(line.split()[0] if line else "" for line in source)
        (tmp_path / "words.txt").write_text(words + "\n")
        predicted = run_cli("segatron-predict", "ner", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                            "--pretrain-data", segabert_corpus, "--input", tmp_path / "words.txt",
                            "--out", tmp_path / "words.predicted", "--cpu")
        assert "f1 " not in predicted
        labelled = (tmp_path / "words.predicted").read_text().splitlines()
        assert [line.split()[:-1] for line in labelled] == [line.split()[:1] for line in source]
        assert [line.split()[-1] for line in labelled if line and line.split()[0] != "-DOCSTART-"] == \
            [line.split()[-1] for line in lines if line and line.split()[0] != "-DOCSTART-"]
        # a file whose last column is not NER labels (chunk tags) is labelled, not scored against it
        chunks = "\n".join(" ".join(line.split()[:3]) for line in source)
        (tmp_path / "chunks.txt").write_text(chunks + "\n")
        predicted = run_cli("segatron-predict", "ner", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                            "--pretrain-data", segabert_corpus, "--input", tmp_path / "chunks.txt",
                            "--out", tmp_path / "chunks.predicted", "--cpu")
        assert "f1 " not in predicted and "not scored: the last column of" in predicted


def test_a_label_outside_labels_names_the_file_and_line(tmp_path, segabert_corpus):
    (tmp_path / "ner").mkdir()
    write_ner_file(tmp_path / "ner" / "train.txt", 2, seed=1)
    (tmp_path / "ner" / "valid.txt").write_text(CONLL.replace("B-MISC", "B-DRUG"))
    out = fairseq_train(tmp_path / "ner", task="token_labelling", arch="segabert_tiny", criterion="token_labelling",
                        save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--pretrain-data", segabert_corpus, "--batch-size", 4, "--max-update", 1])
    assert f"{tmp_path / 'ner' / 'valid.txt'}:5: label 'B-DRUG' is not one of --labels O,B-PER," in out


@pytest.mark.end_to_end
@pytest.mark.parametrize("kind, head", [("segabert", "bilstm_crf"), ("bert", "linear")])
def test_fine_tuning_learns_the_entities(tmp_path, kind, head, request, segabert_corpus):
    """A synthetic CoNLL file whose entities follow from the words: after fine-tuning from a tiny pre-trained model,
    segatron-predict ner finds them (span F1 far above a model that labels nothing)."""
    arch, options, checkpoint = pretrained_kind(request, kind)
    (tmp_path / "ner").mkdir()
    write_ner_file(tmp_path / "ner" / "train.txt", 60, seed=1)
    write_ner_file(tmp_path / "ner" / "valid.txt", 6, seed=2)
    fairseq_train(tmp_path / "ner", task="token_labelling", arch=arch, criterion="token_labelling",
                  save_dir=tmp_path / "ft", lr=3e-3,
                  extra=[*options, "--pretrain-data", segabert_corpus, "--restore-file", checkpoint,
                         "--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
                         "--token-head", head, "--max-positions", 32, "--batch-size", 8, "--max-update", 120,
                         "--no-epoch-checkpoints", "--disable-validation"])
    predicted = run_cli("segatron-predict", "ner", "--checkpoint", tmp_path / "ft" / "checkpoint_last.pt",
                        "--pretrain-data", segabert_corpus, "--input", tmp_path / "ner" / "valid.txt",
                        "--out", tmp_path / "valid.predicted", "--cpu")
    f1 = float(re.search(r"f1 ([0-9.]+) \|", predicted).group(1))
    assert f1 >= 90, predicted[-1000:]
