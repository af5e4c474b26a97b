"""from_pretrained of the three models (hub/checkpoints.py): a missing, empty or truncated checkpoint, one of
another model, or a corpus whose dictionary does not fit is a one-line OSError / ValueError naming the file."""
import pytest


@pytest.fixture(scope="module")
def bad(segabert_checkpoint, tmp_path_factory):
    """The directories empty/ and truncated/ (the first half of a checkpoint), each with a checkpoint_last.pt."""
    tmp = tmp_path_factory.mktemp("from_pretrained_errors")
    data = segabert_checkpoint.read_bytes()
    for name, content in (("empty", b""), ("truncated", data[:len(data) // 2])):
        (tmp / name).mkdir()
        (tmp / name / "checkpoint_last.pt").write_bytes(content)
    return tmp


@pytest.fixture(scope="module")
def trained(segatron_xl_trained, segabert_checkpoint, segabert_corpus, cross_thought_trained):
    """Model class name -> (its model directory, its corpus)."""
    return {"SegatronXLModel": (segatron_xl_trained / "ckpt", segatron_xl_trained / "bin"),
            "SegaBERTModel": (segabert_checkpoint.parent, segabert_corpus),
            "CrossThoughtModel": (cross_thought_trained / "ckpt", cross_thought_trained / "bin")}


# a corpus whose dictionary has another size than the model's (the two generated WikiText corpora have the same)
OF_ANOTHER_SIZE = {"SegatronXLModel": "SegaBERTModel", "SegaBERTModel": "SegatronXLModel",
                   "CrossThoughtModel": "SegaBERTModel"}


def _model_class(name):
    from segatron_fairseq.models.cross_thought import CrossThoughtModel
    from segatron_fairseq.models.segabert import SegaBERTModel
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    return {"SegatronXLModel": SegatronXLModel, "SegaBERTModel": SegaBERTModel,
            "CrossThoughtModel": CrossThoughtModel}[name]


def _one_line(err, *names):
    message = str(err.value)
    assert "\n" not in message
    for name in names:
        assert str(name) in message, message


@pytest.mark.parametrize("name", ["SegatronXLModel", "SegaBERTModel", "CrossThoughtModel"])
def test_from_pretrained_refuses(name, trained, bad):
    model_class, (directory, corpus) = _model_class(name), trained[name]
    for kind in ("empty", "truncated"):
        with pytest.raises(ValueError) as err:
            model_class.from_pretrained(str(bad / kind), "checkpoint_last.pt", str(corpus))
        _one_line(err, bad / kind / "checkpoint_last.pt")
    with pytest.raises(OSError) as err:
        model_class.from_pretrained(str(bad / "nowhere"), "checkpoint_last.pt", str(corpus))
    _one_line(err, bad / "nowhere" / "checkpoint_last.pt")
    others = [other for other in trained if other != name]
    for other in others:
        other_directory, other_corpus = trained[other]
        with pytest.raises(ValueError) as err:  # the wrong model class
            model_class.from_pretrained(str(other_directory), "checkpoint_last.pt", str(other_corpus))
        _one_line(err, other_directory / "checkpoint_last.pt", "checkpoint")
    other_corpus = trained[OF_ANOTHER_SIZE[name]][1]
    with pytest.raises(ValueError) as err:  # a dictionary that does not fit
        model_class.from_pretrained(str(directory), "checkpoint_last.pt", str(other_corpus))
    _one_line(err, other_corpus / "dict.txt", directory / "checkpoint_last.pt")
