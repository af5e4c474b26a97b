"""--bpe wordpiece: the binarizer and the text encoders read text as BERT's tokenizer does (transformers'
BertTokenizerFast is the oracle), so an imported SegaBERT sees its own pieces."""
import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli  # noqa: F401

SEGABERT = ROOT.parent / "shared" / "fixtures" / "authors" / "segabert"
pytestmark = pytest.mark.skipif(not SEGABERT.is_dir(), reason="../shared/fixtures/authors is absent")

TEXT = ("The w1s w2ed at her. He was w4ing the w5 of it. She is w7 with his.\n"
        "It w9ed W10 and an W11ing w12 for her. This w13 by his w14 was that.\n"
        "From w15 to w16 a w17 was w18ed in it. Her w19 is w20ing on the.\n")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The authors' SegaBERT imported, and a corpus binarized with its dictionary and WordPiece vocabulary."""
    tmp = tmp_path_factory.mktemp("wordpiece")
    run_cli("segatron-import", "authors-segabert", "--model-dir", SEGABERT, "--out", tmp / "model")
    (tmp / "text.txt").write_text(TEXT * 4)
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "text.txt", "--validpref",
            tmp / "text.txt", "--srcdict", tmp / "model" / "dict.txt", "--bpe", "wordpiece", "--bpe-vocab",
            SEGABERT / "vocab.txt", "--destdir", tmp / "bin")
    return tmp


def _bert_ids(text):
    """BertTokenizerFast (uncased), mapped onto fairseq's ids."""
    from transformers import BertTokenizerFast

    from segatron_fairseq.conversion.importers.wordpiece_vocabulary import map_wordpiece, read_wordpiece_vocab

    tokenizer = BertTokenizerFast(vocab_file=str(SEGABERT / "vocab.txt"), do_lower_case=True)
    index = map_wordpiece(read_wordpiece_vocab(str(SEGABERT / "vocab.txt")), "vocab").index
    return index[torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])]


def test_binarized_pieces_are_bert_tokenizers(imported):
    from fairseq.data import Dictionary

    from segatron_fairseq.data import SegmentIndexedDataset

    dataset = SegmentIndexedDataset(str(imported / "bin" / "valid"))
    items = [dataset[i] for i in range(len(dataset))]
    eos = 2
    stream = torch.cat([torch.as_tensor(item.tokens) for item in items])
    paragraphs = [p[p.ne(eos)] for p in stream.split_with_sizes([len(i.tokens) for i in items])]
    expected = [_bert_ids(line) for line in (TEXT * 4).splitlines()]
    assert torch.equal(torch.cat(paragraphs), torch.cat(expected))
    assert int((stream == 3).sum()) == 0  # every piece is in the vocabulary
    sentence_starts = [int((item.token == 0).sum()) for item in items[:3]]
    assert sentence_starts == [3, 2, 2]
    dictionary = Dictionary.load(str(imported / "bin" / "dict.txt"))
    starting = [dictionary[int(t)] for item in items for t in torch.as_tensor(item.tokens)[item.token == 0]]
    assert not any(symbol.startswith("##") for symbol in starting)  # sentences split before WordPiece


def test_hub_encodes_with_wordpiece_and_fills_the_mask(imported):
    from segatron_fairseq.models.segabert import SegaBERTModel

    hub = SegaBERTModel.from_pretrained(str(imported / "model"), "checkpoint.pt", str(imported / "bin"))
    encoded = hub.encode("The w1s w2ed at W3.")
    assert encoded["src_tokens"][0].tolist() == [0, *_bert_ids("The w1s w2ed at W3.").tolist(), 2]
    filled = hub.fill_mask("The w1s <mask> at w3 .", topk=3)
    assert len(filled) == 3 and all(0 < probability < 1 for _, probability, _ in filled)


def test_whole_word_starts_of_a_wordpiece_corpus(imported):
    from segatron_fairseq.tasks.masking import load_dictionary_with_mask, whole_word_starts

    dictionary = load_dictionary_with_mask(str(imported / "bin"))
    starts = whole_word_starts(str(imported / "bin"), dictionary)
    assert starts[dictionary.index("##ing")] == 0 and starts[dictionary.index("w1")] == 1
    assert starts[dictionary.index("<mask>")] == 1


def test_wordpiece_options_are_checked(imported, tmp_path):
    out = run_cli("segatron-preprocess", "--trainpref", imported / "text.txt", "--bpe-vocab", SEGABERT / "vocab.txt",
                  "--destdir", tmp_path / "a", expect_ok=False)
    assert "--bpe-vocab needs --bpe wordpiece" in out
    out = run_cli("segatron-preprocess", "--trainpref", imported / "text.txt", "--bpe", "wordpiece",
                  "--destdir", tmp_path / "b", expect_ok=False)
    assert "--bpe wordpiece needs --bpe-vocab" in out
    out = run_cli("segatron-preprocess", "--input-format", "lines", "--testpref", imported / "text.txt", "--bpe",
                  "wordpiece", "--bpe-cased", "--srcdict", imported / "model" / "dict.txt", "--destdir",
                  imported / "bin", expect_ok=False)
    assert "was binarized with --bpe-cased False, this run asks for --bpe-cased True" in out
