"""segatron-export hf: our segabert models as Hugging Face directories, loaded by transformers==4.35.2 (remote code
for SegaBERT, plain BertForMaskedLM for the BERT baseline); features and MLM logits equal ours to 1e-5, and the
exported tokenizer gives the ids our text encoder gives."""
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import binarized_training_text, fairseq_train, run_cli
from test_huggingface_importers import _hf_bert
from test_wordpiece import SEGABERT, TEXT
from transformers_newest import newest_outputs, newest_tokenizer_and_pipeline

pytestmark = pytest.mark.skipif(not SEGABERT.is_dir(), reason="../shared/fixtures/authors is absent")


def _corpus(tmp, model_dir, vocab):
    (tmp / "text.txt").write_text(TEXT * 4)
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "text.txt", "--srcdict",
            model_dir / "dict.txt", "--bpe", "wordpiece", "--bpe-vocab", vocab, "--destdir", tmp / "bin")
    return tmp / "bin"


def _ours(checkpoint, corpus):
    from segatron_fairseq.models.segabert import SegaBERTModel

    return SegaBERTModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(corpus))


# the SegaBERT export's texts: two paragraphs, a pair, a masked word
TWO_PARAGRAPHS = "The w1s w2ed at her. He was w4ing the w5 of it.\nShe is w7 with his."
PAIR = ("The w1s w2ed at her.", "She is w7 with his.")
MASKED = "The w1s w2ed at <mask>. He was w4ing the w5 of it.\nShe is w7 with his."


@pytest.fixture(scope="module")
def segabert_export(tmp_path_factory):
    """The authors' SegaBERT imported, a WordPiece corpus binarized with its dictionary, and exported:
    (the export's directory, the hub of the imported checkpoint)."""
    tmp = tmp_path_factory.mktemp("segabert_export")
    run_cli("segatron-import", "authors-segabert", "--model-dir", SEGABERT, "--out", tmp / "model")
    corpus = _corpus(tmp, tmp / "model", SEGABERT / "vocab.txt")
    run_cli("segatron-export", "hf", "--checkpoint", tmp / "model" / "checkpoint.pt", "--data", corpus,
            "--out", tmp / "hf")
    return tmp / "hf", _ours(tmp / "model" / "checkpoint.pt", corpus)


def _index_inputs(encoded) -> dict:
    """hub.encode's tensors under the exported model's argument names."""
    return dict(input_ids=encoded["src_tokens"], paragraph_index=encoded["paragraph_index"],
                sentence_index=encoded["sentence_index"], token_index=encoded["token_index"])


def test_segabert_exports_to_remote_code_that_transformers_loads(segabert_export):
    """The authors' SegaBERT (WordPiece) exported: its tokenizer lays raw text out as hub.encode (ids, the three
    indexes, token types; a text of two paragraphs and a pair), the exported model gives hub's features and MLM
    logits, and pipeline("fill-mask") on raw text gives hub.fill_mask's words and probabilities (1e-5), in 4.35.2
    (the newest release: the next test)."""
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer, pipeline

    directory, hub = segabert_export
    encoded = hub.encode(TWO_PARAGRAPHS)
    tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=True)
    _assert_same_layout(tokenizer(TWO_PARAGRAPHS), encoded)
    inputs = _index_inputs(encoded)
    assert inputs["paragraph_index"].max() == 1 and inputs["sentence_index"].max() == 1
    pair = hub.encode(*PAIR)
    _assert_same_layout(tokenizer(*PAIR), pair)
    expected = [(symbol, probability) for _, probability, symbol in hub.fill_mask(MASKED, topk=5)]
    with torch.no_grad():
        features = hub.extract_features(encoded)
        logits, _ = hub.model(**encoded)
        exported = AutoModel.from_pretrained(directory, trust_remote_code=True).eval()
        torch.testing.assert_close(exported(**inputs).last_hidden_state, features, rtol=0, atol=1e-5)
        exported_mlm = AutoModelForMaskedLM.from_pretrained(directory, trust_remote_code=True).eval()
        torch.testing.assert_close(exported_mlm(**inputs).logits, logits, rtol=0, atol=1e-5)
        pair_inputs = {"input_ids": pair["src_tokens"], "token_type_ids": pair["token_type"],
                       **{f"{n}_index": pair[f"{n}_index"] for n in ("paragraph", "sentence", "token")}}
        torch.testing.assert_close(exported_mlm(**pair_inputs).logits, hub.model(**pair)[0], rtol=0, atol=1e-5)
        filled = pipeline("fill-mask", model=str(directory), trust_remote_code=True, top_k=5)(MASKED)
    _assert_same_fillings(filled, expected, tokenizer)


@pytest.mark.end_to_end
def test_segabert_export_loads_in_the_newest_release(segabert_export, tmp_path):
    """The same export in the newest transformers release (a subprocess): MLM logits, the tokenizer's layout and
    pipeline("fill-mask")'s words and probabilities equal hub's (1e-5)."""
    from transformers import AutoTokenizer

    directory, hub = segabert_export
    encoded = hub.encode(TWO_PARAGRAPHS)
    expected = [(symbol, probability) for _, probability, symbol in hub.fill_mask(MASKED, topk=5)]
    with torch.no_grad():
        logits, _ = hub.model(**encoded)
    newest = newest_outputs(tmp_path, directory, "AutoModelForMaskedLM", _index_inputs(encoded),
                            trust_remote_code=True)
    torch.testing.assert_close(newest, logits, rtol=0, atol=1e-5)
    newest_run = newest_tokenizer_and_pipeline(tmp_path, directory, "fill-mask", [(TWO_PARAGRAPHS,)], MASKED, top_k=5)
    _assert_same_layout(newest_run["tokenizer"][0], encoded)
    tokenizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=True)
    _assert_same_fillings(newest_run["pipeline"], expected, tokenizer)


def _assert_same_layout(theirs, ours) -> None:
    """The exported tokenizer's output equals hub.encode's (ids, the three indexes, token types)."""
    assert list(theirs["input_ids"]) == ours["src_tokens"][0].tolist()
    for name in ("paragraph", "sentence", "token"):
        assert list(theirs[f"{name}_index"]) == ours[f"{name}_index"][0].tolist(), name
    token_type = ours.get("token_type", torch.zeros_like(ours["src_tokens"]))
    assert list(theirs["token_type_ids"]) == token_type[0].tolist()


def _assert_same_fillings(filled, expected, tokenizer) -> None:
    """pipeline("fill-mask")'s predictions: hub.fill_mask's symbols, in order, with their probabilities (1e-5)."""
    assert [tokenizer.convert_ids_to_tokens(int(f["token"])) for f in filled] == [s for s, _ in expected]
    torch.testing.assert_close(torch.tensor([float(f["score"]) for f in filled]),
                               torch.tensor([p for _, p in expected]), rtol=0, atol=1e-5)


BERT_PAIR = ("tok5 tok6s tok7", "tok8 tok9ing tok1000")


@pytest.fixture(scope="module")
def bert_export(tmp_path_factory):
    """A random Hugging Face BERT imported, a WordPiece corpus binarized with its dictionary, and exported: (the
    folder holding model/, bin/ and hf/, the hub of the imported checkpoint)."""
    tmp = tmp_path_factory.mktemp("bert_export")
    _hf_bert(tmp / "original")
    run_cli("segatron-import", "hf-bert", "--model-dir", tmp / "original", "--out", tmp / "model")
    words = " ".join(f"tok{i}" for i in range(5, 40))
    (tmp / "text.txt").write_text(f"{words} tok7ing.\n{words} tok9s tok1000.\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "text.txt", "--srcdict",
            tmp / "model" / "dict.txt", "--bpe", "wordpiece", "--bpe-vocab", tmp / "original" / "vocab.txt",
            "--bpe-cased", "--destdir", tmp / "bin")
    run_cli("segatron-export", "hf", "--checkpoint", tmp / "model" / "checkpoint.pt", "--data", tmp / "bin",
            "--out", tmp / "hf")
    return tmp, _ours(tmp / "model" / "checkpoint.pt", tmp / "bin")


def test_bert_baseline_exports_to_plain_bert_for_masked_lm(bert_export, tmp_path):
    from transformers import BertForMaskedLM, BertTokenizer

    exported_at, hub = bert_export
    assert not (exported_at / "hf" / "modeling_segabert.py").exists()
    pair = hub.encode(*BERT_PAIR)
    tokenizer = BertTokenizer.from_pretrained(exported_at / "hf")
    assert tokenizer(*BERT_PAIR)["input_ids"] == pair["src_tokens"][0].tolist()
    exported = BertForMaskedLM.from_pretrained(exported_at / "hf").eval()
    with torch.no_grad():
        theirs = exported(input_ids=pair["src_tokens"], token_type_ids=pair["token_type"]).logits
        torch.testing.assert_close(theirs, hub.model(**pair)[0], rtol=0, atol=1e-5)
        features = exported.bert(input_ids=pair["src_tokens"], token_type_ids=pair["token_type"]).last_hidden_state
        torch.testing.assert_close(features, hub.extract_features(pair), rtol=0, atol=1e-5)
    # and back: the export imports into the same model
    run_cli("segatron-import", "hf-bert", "--model-dir", exported_at / "hf", "--out", tmp_path / "again")
    assert (tmp_path / "again" / "dict.txt").read_text() == (exported_at / "model" / "dict.txt").read_text()
    again = torch.load(tmp_path / "again" / "checkpoint.pt", weights_only=False)["model"]
    first = torch.load(exported_at / "model" / "checkpoint.pt", weights_only=False)["model"]
    assert again.keys() == first.keys()
    for key in first:
        torch.testing.assert_close(again[key], first[key], rtol=0, atol=0, msg=key)


@pytest.mark.end_to_end
def test_bert_baseline_export_loads_in_the_newest_release(bert_export, tmp_path):
    """The same export as BertForMaskedLM in the newest transformers release (a subprocess): our logits to 1e-5."""
    exported_at, hub = bert_export
    pair = hub.encode(*BERT_PAIR)
    with torch.no_grad():
        ours = hub.model(**pair)[0]
    newest = newest_outputs(tmp_path, exported_at / "hf", "BertForMaskedLM",
                            dict(input_ids=pair["src_tokens"], token_type_ids=pair["token_type"]))
    torch.testing.assert_close(newest, ours, rtol=0, atol=1e-5)


def test_export_refuses_what_it_cannot_write(tmp_path):
    (tmp_path / "taken").mkdir()
    run_cli("segatron-import", "authors-segabert", "--model-dir", SEGABERT, "--out", tmp_path / "model")
    corpus = _corpus(tmp_path, tmp_path / "model", SEGABERT / "vocab.txt")
    out = run_cli("segatron-export", "hf", "--checkpoint", tmp_path / "model" / "checkpoint.pt", "--data", corpus,
                  "--out", tmp_path / "taken", expect_ok=False)
    assert "taken: --out exists; choose a new directory" in out


def _cross_thought_checkpoint(tmp_path, native):
    """The imported authors' layout (shared special embedding and cross layer), or a model of ours with N special
    embeddings, two cross layers per special index and --cross-mask-self, after one update; dict.txt w0..w19 and
    a corpus of those words."""
    from test_cross_thought_import import WORDS, _their_checkpoint

    (tmp_path / "dict.txt").write_text("".join(f"{w} {100 - i}\n" for i, w in enumerate(WORDS)))
    (tmp_path / "text.txt").write_text(" ".join(f"w{i % 20}" for i in range(200)) + "\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "text.txt", "--validpref",
            tmp_path / "text.txt", "--srcdict", tmp_path / "dict.txt", "--destdir", tmp_path / "bin")
    if not native:
        torch.save(_their_checkpoint(4 + len(WORDS) + 1), tmp_path / "ct.pt")
        run_cli("segatron-import", "authors-cross-thought", "--checkpoint", tmp_path / "ct.pt", "--dict",
                tmp_path / "dict.txt", "--out", tmp_path / "model")
        return tmp_path / "model" / "checkpoint.pt"
    fairseq_train(tmp_path / "bin", task="cross_thought_mlm", arch="cross_thought_tiny", criterion="masked_lm",
                  save_dir=tmp_path / "model", lr=1e-2,
                  extra=["--cross-layers", 2, "--cross-mask-self", "--max-positions", 40, "--num-sequences", 4,
                         "--sequence-length", 7, "--batch-size", 2, "--max-update", 1, "--no-epoch-checkpoints"])
    return tmp_path / "model" / "checkpoint_last.pt"


CROSS_THOUGHT_TEXTS = ["w3 w17 w5 w9", "w1 w2"]


@dataclass
class CrossThoughtExport:
    directory: Path  # the export
    model: Any  # ours, in eval mode
    task: Any
    hub: Any

    def tokens(self) -> torch.Tensor:
        """(2, 4, 7) random short sequences: one shorter sequence, one missing."""
        pad = self.task.dictionary.pad()
        tokens = torch.randint(4, 24, (2, 4, 7), generator=torch.Generator().manual_seed(3))
        tokens[0, 1, 5:] = pad  # a shorter sequence
        tokens[1, 3] = pad  # a missing one
        return tokens


@pytest.fixture(scope="module", params=[False, True], ids=["imported", "native"])
def cross_thought_export(request, tmp_path_factory) -> CrossThoughtExport:
    """The authors' Cross-Thought imported, or one of ours trained one update (``_cross_thought_checkpoint``),
    exported."""
    from fairseq import checkpoint_utils

    from segatron_fairseq.models.cross_thought import CrossThoughtModel

    tmp = tmp_path_factory.mktemp("cross_thought_export")
    checkpoint = _cross_thought_checkpoint(tmp, request.param)
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", tmp / "bin", "--out", tmp / "hf")
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                    arg_overrides={"data": str(tmp / "bin")})
    hub = CrossThoughtModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(tmp / "bin"))
    return CrossThoughtExport(tmp / "hf", models[0].eval(), task, hub)


def test_cross_thought_exports_with_an_encode_of_its_special_states(cross_thought_export):
    """MLM logits and both encode outputs equal ours (a padded and a missing sequence); the tokenizer gives a
    text's words alone, and pipeline("feature-extraction") on raw text gives the hub's encode (E, N x d) in
    4.35.2 (the newest release: the next test)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, pipeline

    export = cross_thought_export
    dictionary = export.task.dictionary
    tokenizer = AutoTokenizer.from_pretrained(export.directory, trust_remote_code=True)
    assert tokenizer("w3  w17 w999")["input_ids"] == [dictionary.index("w3"), dictionary.index("w17"),
                                                      dictionary.unk()]
    expected = export.hub.encode(CROSS_THOUGHT_TEXTS)
    extract = pipeline("feature-extraction", model=export.directory, tokenizer=tokenizer, trust_remote_code=True)
    for text, embedding in zip(CROSS_THOUGHT_TEXTS, expected):
        torch.testing.assert_close(torch.tensor(extract(text)[0]), embedding, rtol=0, atol=1e-5)
    batch = tokenizer(CROSS_THOUGHT_TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        features = extract.model(**batch).sequence_embeddings
    torch.testing.assert_close(features, expected, rtol=0, atol=1e-5)
    tokens = export.tokens()
    exported = AutoModelForMaskedLM.from_pretrained(export.directory, trust_remote_code=True).eval()
    with torch.no_grad():
        ours, extra = export.model(tokens)
        theirs = exported(tokens).logits
        real = tokens.ne(dictionary.pad())
        torch.testing.assert_close(theirs[real], ours[real], rtol=0, atol=1e-5)
        present = real.any(-1)
        torch.testing.assert_close(exported.encode(tokens)[present], extra["cross_states"][present], rtol=0, atol=1e-5)
        torch.testing.assert_close(exported.encode(tokens, cross=False)[present],
                                   extra["sequence_embeddings"][present], rtol=0, atol=1e-5)


@pytest.mark.end_to_end
def test_cross_thought_export_loads_in_the_newest_release(cross_thought_export, tmp_path):
    """The same export in the newest transformers release (a subprocess): the tokenizer's ids,
    pipeline("feature-extraction")'s embedding and the MLM logits equal ours (1e-5)."""
    from transformers import AutoTokenizer

    export = cross_thought_export
    text = CROSS_THOUGHT_TEXTS[0]
    newest_run = newest_tokenizer_and_pipeline(tmp_path, export.directory, "feature-extraction", [(text,)], text)
    tokenizer = AutoTokenizer.from_pretrained(export.directory, trust_remote_code=True)
    assert newest_run["tokenizer"][0]["input_ids"] == tokenizer(text)["input_ids"]
    torch.testing.assert_close(torch.tensor(newest_run["pipeline"][0]), export.hub.encode([text])[0], rtol=0,
                               atol=1e-5)
    tokens = export.tokens()
    with torch.no_grad():
        ours, _ = export.model(tokens)
    real = tokens.ne(export.task.dictionary.pad())
    newest = newest_outputs(tmp_path, export.directory, "AutoModelForMaskedLM", {"input_ids": tokens},
                            trust_remote_code=True)
    torch.testing.assert_close(newest[real], ours[real], rtol=0, atol=1e-5)


def test_sentencepiece_corpus_exports_a_tokenizer_with_our_ids(tmp_path):
    """A SegaBERT pre-trained on a sentencepiece corpus: the exported tokenizer (the corpus's model and our
    dictionary, remote code) gives hub.encode's ids and token types, text and pairs, <mask> kept whole."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    binarized_training_text(tmp_path, 30, 61, "--bpe", "sentencepiece", "--bpe-vocab-size", 100)
    fairseq_train(tmp_path / "bin", task="segabert_mlm", arch="segabert_tiny", criterion="masked_lm",
                  save_dir=tmp_path / "ckpt", lr=3e-3, extra=["--tokens-per-sample", 48, "--batch-size", 8,
                                                             "--max-update", 2, "--no-epoch-checkpoints",
                                                             "--log-format", "simple"])
    run_cli("segatron-export", "hf", "--checkpoint", tmp_path / "ckpt" / "checkpoint_last.pt", "--data",
            tmp_path / "bin", "--out", tmp_path / "hf")
    hub = _ours(tmp_path / "ckpt" / "checkpoint_last.pt", tmp_path / "bin")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "hf", trust_remote_code=True)
    text = "The lobster  lives on rocky ground . The larva hides under a ledge ."
    assert tokenizer(text)["input_ids"] == hub.encode(text)["src_tokens"][0].tolist()
    pair = hub.encode("The lobster lives .", "The larva zzqx hides .")
    theirs = tokenizer("The lobster lives .", "The larva zzqx hides .")
    assert theirs["input_ids"] == pair["src_tokens"][0].tolist()
    assert theirs["token_type_ids"] == pair["token_type"][0].tolist()
    masked = tokenizer("The lobster <mask> on rocky ground .")["input_ids"]
    assert masked.count(hub.dictionary.index("<mask>")) == 1
    exported = AutoModelForMaskedLM.from_pretrained(tmp_path / "hf", trust_remote_code=True).eval()
    inputs = {"input_ids": pair["src_tokens"], "token_type_ids": pair["token_type"],
              **{f"{n}_index": pair[f"{n}_index"] for n in ("paragraph", "sentence", "token")}}
    with torch.no_grad():
        torch.testing.assert_close(exported(**inputs).logits, hub.model(**pair)[0], rtol=0, atol=1e-5)
