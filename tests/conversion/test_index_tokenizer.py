"""The tokenizer segatron-export writes for SegaBERT and Segatron-XL (``SegmentIndexTokenizer``: remote code that
runs the binarizer's own modules, shipped beside it): on held-out text with paragraphs, abbreviations, quotes and
WikiText's @.@ markup it gives the token ids and the sentence / paragraph starts that segatron-preprocess stored,
and the ids, indexes and token types of our text encoder's layout; it pads its own keys, refuses what it cannot
lay out, and its shipped modules import no part of the plugin, fairseq or torch."""
import json

import pytest
from conftest import run_cli
from shipped_imports import assert_imports_only

HELD_OUT = "".join([
    " = Lobster fishing = \n\n",
    " Mr. Smith and Dr. Jones fished near St. Mary 's Bay in 1 @,@ 200 traps . The U.S. survey found 3 @.@ 5 "
    "lobsters per trap . \" It was a good year , \" Mr. Smith said . They sold the catch in May . \n\n",
    " = = History = = \n\n",
    " The fishery began in the 19th century . By No. 4 harbour , boats of 7 @-@ 8 m worked at night . H. Milne "
    "wrote about it . The larva hides under a ledge . \n\n",
    " Each adult moves in deep water . It grows for up to 20 years . \n",
])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A sentencepiece WikiText corpus whose Punkt model is trained on generated documents; its valid split is
    HELD_OUT. Returns (bin directory, the held-out file)."""
    from corpus import make_documents, write_wikitext

    directory = tmp_path_factory.mktemp("index_tokenizer")
    write_wikitext(directory / "train.txt", make_documents(40, seed=5))
    (directory / "valid.txt").write_text(HELD_OUT, encoding="utf-8")
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", directory / "train.txt",
            "--validpref", directory / "valid.txt", "--bpe", "sentencepiece", "--bpe-vocab-size", 100,
            "--destdir", directory / "bin")
    return directory / "bin", directory / "valid.txt"


def _tokenizer(directory, corpus_dir, layout, mask=True):
    """``AutoTokenizer`` of the files ``index_tokenizer_files`` writes for the corpus (its dictionary with
    ``<mask>`` appended, as the masked-LM tasks append it, when ``mask``)."""
    import shutil

    from fairseq.data import Dictionary
    from transformers import AutoTokenizer

    from segatron_fairseq.conversion.exporters.huggingface_directory import index_tokenizer_files
    from segatron_preprocess.text_encoder import TextEncoder

    dictionary = Dictionary.load(str(corpus_dir / "dict.txt"))
    if mask:
        dictionary.add_symbol("<mask>")
    files, copies = index_tokenizer_files(dictionary, TextEncoder(str(corpus_dir), dictionary, keep=("<mask>",)),
                                          layout, 512, {"paragraph": 50, "sentence": 100, "token": 256})
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    for name, source in copies.items():
        shutil.copyfile(source, directory / name)
    return AutoTokenizer.from_pretrained(directory, trust_remote_code=True), dictionary


def test_stream_layout_gives_the_binarizers_tokens_and_starts_of_held_out_text(tmp_path, corpus):
    """tokenizer(the held-out file's text) = </s> then every token of the binarized valid split, with its sentence
    and paragraph starts; the text's abbreviations, numbers and quotes split no sentence, and a text that does not
    end with a line break leaves its last </s> out."""
    from segatron_fairseq.evaluation.token_losses import read_stream

    corpus_dir, held_out = corpus
    tokenizer, dictionary = _tokenizer(tmp_path / "stream", corpus_dir, "stream")
    tokens, sentence_starts, paragraph_starts = read_stream(str(corpus_dir / "valid"))
    encoded = tokenizer(held_out.read_text(encoding="utf-8"))
    assert encoded["input_ids"] == [dictionary.eos()] + tokens.tolist()
    assert encoded["sentence_starts"] == [1] + sentence_starts.astype(int).tolist()
    assert encoded["paragraph_starts"] == [1] + paragraph_starts.astype(int).tolist()
    assert encoded["attention_mask"] == [1] * len(encoded["input_ids"])
    # title, heading, 3 text paragraphs; 4 + 4 + 2 sentences in them and one each in the title and the heading
    assert sum(encoded["paragraph_starts"][1:]) == 5 and sum(encoded["sentence_starts"][1:]) == 12
    unended = tokenizer(held_out.read_text(encoding="utf-8").rstrip("\n"))
    assert unended["input_ids"] == encoded["input_ids"][:-1]


def test_encoder_layout_gives_the_text_encoders_ids_indexes_and_token_types(tmp_path, corpus):
    """A text (lines are paragraphs) and a pair, as SegaBERTModel.encode lays them out: the text encoder's items,
    </s> left out, [CLS] / [SEP] with their neighbours' indexes, cut to the model's length; <mask> stays whole."""
    from segatron_fairseq.segments import layout_of_paragraphs, layout_of_run
    from segatron_preprocess.text_encoder import TextEncoder

    corpus_dir, _ = corpus
    tokenizer, dictionary = _tokenizer(tmp_path / "encoder", corpus_dir, "encoder")
    encoder = TextEncoder(str(corpus_dir), dictionary, keep=("<mask>",))
    text = "Mr. Smith fished at St. Mary 's Bay . The U.S. survey found 3 @.@ 5 lobsters .\nIt grew . It <mask> ."
    ours = encoder.encode(text, "lines")
    layout = layout_of_run(ours.tokens, {"paragraph": ours.paragraph_index, "sentence": ours.sentence_index,
                                         "token": ours.token_index}, dictionary.bos(), dictionary.eos(), 512,
                           {"paragraph": 50, "sentence": 100, "token": 256})
    encoded = tokenizer(text)
    assert encoded["input_ids"] == layout.tokens.tolist()
    for name in ("paragraph", "sentence", "token"):
        assert encoded[f"{name}_index"] == layout.indexes[name].tolist(), name
    assert encoded["token_type_ids"] == [0] * len(layout.tokens)
    assert max(encoded["paragraph_index"]) == 1 and encoded["sentence_index"].count(1) > 3
    assert encoded["input_ids"].count(dictionary.index("<mask>")) == 1
    long_text = " ".join(["The lobster lives in deep water ."] * 40)
    assert len(tokenizer(long_text)["input_ids"]) == 512
    assert len(tokenizer(long_text, truncation=True, max_length=20)["token_index"]) == 20
    texts = [[i for i in encoder.encode(t, "lines").tokens if i != dictionary.eos()]
             for t in ("Dr. Jones fished .", "It grew .")]
    tokens, paragraph, sentence, token = layout_of_paragraphs(texts, dictionary.bos(), dictionary.eos(), 512, 256)
    pair = tokenizer("Dr. Jones fished .", "It grew .")
    assert (pair["input_ids"], pair["paragraph_index"], pair["sentence_index"], pair["token_index"],
            pair["token_type_ids"]) == (tokens, paragraph, sentence, token, paragraph)


def test_batches_are_padded_in_every_key_and_bad_input_is_refused(tmp_path, corpus):
    corpus_dir, _ = corpus
    tokenizer, dictionary = _tokenizer(tmp_path / "encoder", corpus_dir, "encoder")
    batch = tokenizer(["It grew .", "Mr. Smith fished . It grew ."], padding=True, return_tensors="pt")
    short, long = (tokenizer(t) for t in ("It grew .", "Mr. Smith fished . It grew ."))
    width = len(long["input_ids"])
    assert batch["input_ids"].shape == (2, width)
    assert batch["input_ids"][0].tolist() == short["input_ids"] + [dictionary.pad()] * (width - len(short["input_ids"]))
    assert batch["sentence_index"][1].tolist() == long["sentence_index"]
    assert batch["sentence_index"][0].tolist() == short["sentence_index"] + [0] * (width - len(short["input_ids"]))
    assert batch["attention_mask"][0].sum() == len(short["input_ids"])
    tokenizer.padding_side = "left"
    left = tokenizer(["It grew .", "Mr. Smith fished . It grew ."], padding=True)
    missing = width - len(short["input_ids"])
    assert left["sentence_index"][0] == [0] * missing + short["sentence_index"]
    assert left["attention_mask"][0] == [0] * missing + [1] * len(short["input_ids"])
    with pytest.raises(ValueError, match="holds no words"):
        tokenizer("   ")
    for option in ("return_offsets_mapping", "return_overflowing_tokens", "is_split_into_words"):
        with pytest.raises(TypeError, match=option):
            tokenizer("It grew .", **{option: True})
    with pytest.raises(ValueError, match="longest_first"):
        tokenizer("It grew .", "It did .", truncation="only_second", max_length=5)
    with pytest.raises(TypeError, match="both lists"):
        tokenizer(["It grew .", "It did ."], "ab")
    stream, _ = _tokenizer(tmp_path / "stream", corpus_dir, "stream")
    with pytest.raises(ValueError, match="not a pair"):
        stream("It grew .", "It did .")
    with pytest.raises(ValueError, match="not cut"):
        stream("It grew . It did .", truncation=True, max_length=3)
    streams = stream(["It grew .", "Mr. Smith fished . It grew ."], padding=True)
    assert streams["paragraph_starts"][0] == stream("It grew .")["paragraph_starts"] + [0] * (
        len(streams["input_ids"][1]) - len(stream("It grew .")["input_ids"]))


@pytest.mark.parametrize("layout", ["encoder", "stream", "sequence"])
def test_a_saved_tokenizer_loads_again_and_lays_text_out_alike(tmp_path, corpus, layout):
    from transformers import AutoTokenizer

    corpus_dir, _ = corpus
    tokenizer, _ = _tokenizer(tmp_path / "exported", corpus_dir, layout)
    tokenizer.save_pretrained(tmp_path / "saved")
    again = AutoTokenizer.from_pretrained(tmp_path / "saved", trust_remote_code=True)
    text = "Mr. Smith fished at St. Mary 's Bay . It grew .\nThe larva hides ."
    assert dict(again(text)) == dict(tokenizer(text))


def test_a_dictionary_without_mask_has_no_mask_token(tmp_path, corpus):
    """A causal LM's dictionary has no <mask>: the tokenizer names none (never an id past the table)."""
    corpus_dir, _ = corpus
    tokenizer, dictionary = _tokenizer(tmp_path / "stream", corpus_dir, "stream", mask=False)
    assert tokenizer.mask_token is None and max(tokenizer("It <mask> .")["input_ids"]) < len(dictionary)


def test_shipped_text_modules_import_no_plugin_fairseq_or_torch(tmp_path, corpus):
    """transformers copies the tokenizer's relative imports into its module cache: every shipped module imports
    only the standard library, numpy, NLTK, sentencepiece, tokenizers (and transformers, the tokenizer itself) or
    another shipped module."""
    corpus_dir, _ = corpus
    _tokenizer(tmp_path / "tok", corpus_dir, "encoder")
    shipped = {path.stem for path in (tmp_path / "tok").glob("*.py")}
    assert {"units", "document_items", "indexer", "sentences", "subwords", "layout", "levels"} <= shipped
    assert_imports_only(tmp_path / "tok", {"numpy", "nltk", "sentencepiece", "tokenizers"},
                        lambda stem: stem.startswith("tokenization_"))


def test_punkt_parameters_survive_their_json(corpus):
    """punkt.json holds the corpus's splitter exactly: the same identity (sha256 of its parameters and rules)."""
    from segatron_preprocess import sentences

    corpus_dir, _ = corpus
    splitter = sentences.load(sentences.saved_in(str(corpus_dir)))
    again = sentences.load_params(sentences.params_from_json(json.loads(json.dumps(
        sentences.params_to_json(splitter._params)))))
    assert sentences.splitter_identity(again) == sentences.splitter_identity(splitter)
    assert len(splitter._params.abbrev_types) > 20 and splitter._params.ortho_context


def test_tensors_of_one_text_are_a_batch_of_one(tmp_path, corpus):
    corpus_dir, _ = corpus
    tokenizer, _ = _tokenizer(tmp_path / "encoder", corpus_dir, "encoder")
    single, listed = tokenizer("It grew .", return_tensors="pt"), tokenizer("It grew .")
    assert single["input_ids"].shape == (1, len(listed["input_ids"]))
    assert single["token_index"][0].tolist() == listed["token_index"]


def test_a_stream_decoded_in_two_parts_joins_into_the_whole(tmp_path, corpus):
    """Cut the ids of a text anywhere (transformers 5's text-generation pipeline decodes the new tokens alone and
    appends them to the prompt): the part after the cut decodes with the space before its first piece when that
    piece begins a word (sentencepiece's ▁), none inside a word, and the two parts join into the whole text; the
    stream's leading </s> opens a text, with no space."""
    corpus_dir, _ = corpus
    tokenizer, _ = _tokenizer(tmp_path / "stream", corpus_dir, "stream")
    ids = tokenizer("The lobster lives near the coast of Norway. It hides under a ledge.")["input_ids"]
    whole = tokenizer.decode(ids, skip_special_tokens=True)
    assert not whole.startswith(" ")
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert any(not piece.startswith("\u2581") for piece in pieces[2:])  # some cut falls inside a word
    for cut in range(2, len(ids)):
        head, tail = tokenizer.decode(ids[:cut], skip_special_tokens=True), tokenizer.decode(ids[cut:])
        assert tail.startswith(" ") == pieces[cut].startswith("\u2581"), (cut, pieces[cut])
        assert head + tail == whole, cut



_LOAD = """
import sys
sys.path.insert(0, sys.argv[1])  # run with -S: this folder is the environment
from transformers import AutoTokenizer
try:
    AutoTokenizer.from_pretrained(sys.argv[2], trust_remote_code=True)
except ImportError as error:
    print("ImportError:", error, "| remote modules imported:",
          sorted(name for name in sys.modules if name.startswith("transformers_modules.")))
else:
    print("loaded")
"""


@pytest.mark.end_to_end
@pytest.mark.parametrize("release", ["4.35.2", "newest"])
def test_with_only_torch_and_transformers_transformers_names_what_the_tokenizer_needs(tmp_path, corpus, release):
    """In an environment of only torch and transformers (and what they require: scripts/share_packages.py links
    them), loading the exported tokenizer ends in transformers' own message naming nltk and sentencepiece with the
    pip command, before any of the directory's code is imported; with those two added, it loads."""
    import subprocess
    import sys

    from conftest import ROOT
    from transformers_newest import NEWEST_PYTHON

    corpus_dir, _ = corpus
    _tokenizer(tmp_path / "tok", corpus_dir, "encoder")
    python = sys.executable if release == "4.35.2" else str(NEWEST_PYTHON)
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf")}

    def load(*packages: str) -> str:
        view = tmp_path / "-".join(packages)
        subprocess.run([python, str(ROOT / "scripts" / "share_packages.py"), str(view), *packages], check=True,
                       stdout=subprocess.DEVNULL)
        return subprocess.run([python, "-S", "-c", _LOAD, str(view), str(tmp_path / "tok")], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout

    out = load("torch", "transformers")
    assert "requires the following packages that were not found in your environment" in out, out[-2000:]
    assert "pip install" in out and "nltk" in out and "sentencepiece" in out
    assert out.rstrip().endswith("remote modules imported: []"), out[-2000:]
    assert load("torch", "transformers", "nltk", "sentencepiece").rstrip().endswith("loaded")
