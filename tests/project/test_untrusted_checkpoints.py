"""Loading a checkpoint runs no code from it: every entry point loads with ``weights_only=True`` and the types
fairseq and the plugin save (``fairseq.checkpoint_utils.load_checkpoint_file``, from the patch); anything else is
refused with one line naming the file, the type and SEGATRON_TRUST_CHECKPOINTS, the one switch that loads a file
anyway.

The malicious checkpoint is a real checkpoint's dict with one more object, whose unpickling calls ``os.mkdir``
(standing in for ``os.system``): the marker directory it would create must never appear."""
import json
import os
import pickle

import pytest
import torch
from conftest import PLUGIN_DIR, ROOT, run_cli

TRUST = "SEGATRON_TRUST_CHECKPOINTS"
AUTHORS_SEGATRON_XL = ROOT.parent / "shared" / "fixtures" / "authors" / "segatron_xl"


class _Payload:
    """Unpickled, it calls ``os.mkdir(marker)``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _plant(source, path, marker):
    """``path``: the checkpoint ``source`` (a path, or a dict) with a _Payload added; returns ``path``."""
    from fairseq.checkpoint_utils import load_checkpoint_file

    state = load_checkpoint_file(str(source)) if not isinstance(source, dict) else dict(source)
    state["payload"] = _Payload(marker)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    return path


def _xl(request, tmp, marker):
    """Segatron-XL's trained fixture and a malicious copy of its checkpoint."""
    trained = request.getfixturevalue("segatron_xl_trained")
    return trained, _plant(trained / "ckpt" / "checkpoint_last.pt", tmp / "models" / "evil.pt", marker)


def _segabert(request, tmp, marker):
    corpus = request.getfixturevalue("segabert_corpus")
    return corpus, _plant(request.getfixturevalue("segabert_checkpoint"), tmp / "models" / "evil.pt", marker)


def _cross_thought(request, tmp, marker):
    trained = request.getfixturevalue("cross_thought_trained")
    return trained, _plant(trained / "ckpt" / "checkpoint_last.pt", tmp / "models" / "evil.pt", marker)


XL_EVAL = ["--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--cpu", "--tgt-len", 16]
XL_TRAIN = ["--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--arch", "segatron_xl_tiny", "--criterion",
            "segatron_lm_loss", "--optimizer", "adam", "--lr", 1e-3, "--cpu", "--batch-size", 4, "--tgt-len", 16,
            "--max-update", 1]


def eval_lm(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["fairseq-eval-lm", trained / "bin", *XL_EVAL, "--path", evil, "--gen-subset", "valid"]


def train_restore_file(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["fairseq-train", trained / "bin", *XL_TRAIN, "--save-dir", tmp / "save", "--restore-file", evil]


def train_resume(request, tmp, marker):
    trained, _ = _xl(request, tmp, marker)
    last = _plant(trained / "ckpt" / "checkpoint_last.pt", tmp / "save" / "checkpoint_last.pt", marker)
    return last, ["fairseq-train", trained / "bin", *XL_TRAIN, "--save-dir", tmp / "save"]


def interactive(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    (tmp / "prompts.txt").write_text("The lobster\n")
    return evil, ["fairseq-interactive", trained / "bin", *XL_EVAL, "--path", evil, "--input", tmp / "prompts.txt"]


def generate(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["fairseq-generate", trained / "bin", *XL_EVAL, "--path", evil, "--gen-subset", "valid"]


def predict_glue(request, tmp, marker):
    corpus, evil = _segabert(request, tmp, marker)
    (tmp / "SST-2").mkdir()
    (tmp / "SST-2" / "test.tsv").write_text("index\tsentence\n0\tw1 w2 .\n")
    return evil, ["segatron-predict", "glue", "--checkpoint", evil, "--pretrain-data", corpus, "--glue-task",
                  "SST-2", "--data", tmp / "SST-2", "--out", tmp / "submission", "--cpu"]


def predict_squad(request, tmp, marker):
    corpus, evil = _segabert(request, tmp, marker)
    question = {"id": "q1", "question": "w1", "answers": [{"text": "w2", "answer_start": 3}]}
    squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "w1 w2 .", "qas": [question]}]}]}
    (tmp / "dev.json").write_text(json.dumps(squad))
    return evil, ["segatron-predict", "squad", "--checkpoint", evil, "--pretrain-data", corpus, "--input",
                  tmp / "dev.json", "--out", tmp / "predictions.json", "--cpu"]


def sts(request, tmp, marker):
    corpus, evil = _segabert(request, tmp, marker)
    (tmp / "sts.txt").write_text("w1 w2 .\tw2 w3 .\t3.0\nw4 .\tw5 w6 .\t1.0\n")
    return evil, ["segatron-sts", "--checkpoint", evil, "--data", corpus, "--cpu", tmp / "sts.txt"]


def rank(request, tmp, marker):
    trained, evil = _cross_thought(request, tmp, marker)
    (tmp / "passages.txt").write_text("The lobster lives on rocky ground .\nIts shell is blue .\n")
    (tmp / "questions.jsonl").write_text(json.dumps({"id": "q1", "question": "the shell"}) + "\n")
    return evil, ["cross-thought-rank", "--path", evil, "--data", trained / "bin", "--passages", tmp / "passages.txt",
                  "--questions", tmp / "questions.jsonl", "--embeddings", tmp / "cache.pt", "--output",
                  tmp / "ranked.jsonl", "--cpu"]


def plot_attention(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["segatron-plot", "attention", "--model-dir", evil.parent, "--checkpoint-file", evil.name, "--data",
                  trained / "bin", "--text", trained / "score.txt", "--out", tmp / "attention"]


def plot_boundary(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["segatron-plot", "boundary", evil, "--data", trained / "bin", "--split", "valid", "--tgt-len", 16,
                  "--out", tmp / "boundary"]


def loss_by_boundary(request, tmp, marker):
    trained, evil = _xl(request, tmp, marker)
    return evil, ["segatron-loss-by-boundary", evil, "--data", trained / "bin", "--split", "valid", "--tgt-len", 16]


def export(request, tmp, marker):
    corpus, evil = _segabert(request, tmp, marker)
    return evil, ["segatron-export", "hf", "--checkpoint", evil, "--data", corpus, "--out", tmp / "hf"]


def _transformer_xl_files(tmp):
    """A vocabulary (``<eos>`` and three words) and the constructor arguments of the authors' Transformer-XL."""
    (tmp / "vocab.txt").write_text("<eos>\nw1\nw2\nw3\n")
    config = {"n_token": 4, "vocab_size": 4, "cutoffs": [2], "n_layer": 1, "n_head": 1, "d_model": 4, "d_head": 4,
              "d_inner": 8, "dropout": 0.0, "dropatt": 0.0, "mem_len": 4, "clamp_len": -1, "tgt_len": 4, "div_val": 1}
    (tmp / "config.json").write_text(json.dumps(config))


def import_authors_segatron_xl(request, tmp, marker):
    _transformer_xl_files(tmp)
    evil = _plant({"word_emb.emb_layers.0.weight": torch.zeros(2, 4)}, tmp / "model_state.pt", marker)
    return evil, ["segatron-import", "authors-segatron-xl", "--state", evil, "--config", tmp / "config.json",
                  "--vocab", tmp / "vocab.txt", "--out", tmp / "imported"]


def import_authors_cross_thought(request, tmp, marker):
    _, evil = _cross_thought(request, tmp, marker)
    (tmp / "dict.txt").write_text("w1 3\nw2 2\n")
    return evil, ["segatron-import", "authors-cross-thought", "--checkpoint", evil, "--dict", tmp / "dict.txt",
                  "--out", tmp / "imported"]


def _hf_directory(tmp, marker, model_type):
    """A Hugging Face directory whose pytorch_model.bin carries the payload."""
    model = tmp / "hf"
    model.mkdir()
    _transformer_xl_files(model)
    config = {**json.loads((model / "config.json").read_text()), "model_type": model_type}
    (model / "config.json").write_text(json.dumps(config))
    return model, _plant({"bert.embeddings.word_embeddings.weight": torch.zeros(4, 4)}, model / "pytorch_model.bin",
                         marker)


def import_hf(fmt, model_type):
    def case(request, tmp, marker):
        model, evil = _hf_directory(tmp, marker, model_type)
        return evil, ["segatron-import", fmt, "--model-dir", model, "--out", tmp / "imported"]
    case.__name__ = f"import_{fmt}"
    return case


ENTRY_POINTS = [eval_lm, train_restore_file, train_resume, interactive, generate, predict_glue, predict_squad, sts,
                rank, plot_attention, plot_boundary, loss_by_boundary, export, import_authors_segatron_xl,
                import_authors_cross_thought, import_hf("hf-bert", "bert"), import_hf("authors-segabert", "bert"),
                import_hf("hf-transformer-xl", "transfo-xl")]
@pytest.mark.parametrize("entry_point", ENTRY_POINTS, ids=lambda case: case.__name__)
def test_a_malicious_checkpoint_runs_nothing_at_any_entry_point(entry_point, request, tmp_path, monkeypatch):
    monkeypatch.delenv(TRUST, raising=False)
    marker = tmp_path / "MARKER"
    evil, command = entry_point(request, tmp_path, marker)
    out = run_cli(*command, expect_ok=False)
    assert not marker.exists()
    refusal = f"{evil}: refused: it would import posix.mkdir"
    assert refusal in out and f"load it with {TRUST}=1" in out, out[-3000:]
    assert f"{command[0]}: error: {refusal}" in out and "Traceback" not in out, out[-3000:]


@pytest.mark.parametrize("kind", ["segatron_xl", "segabert", "cross_thought"])
def test_from_pretrained_refuses_a_malicious_checkpoint(kind, request, tmp_path, monkeypatch):
    from fairseq.checkpoint_utils import UntrustedCheckpointError

    from segatron_fairseq.models.cross_thought import CrossThoughtModel
    from segatron_fairseq.models.segabert import SegaBERTModel
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    monkeypatch.delenv(TRUST, raising=False)
    marker = tmp_path / "MARKER"
    model, (data, evil) = {"segatron_xl": (SegatronXLModel, _xl(request, tmp_path, marker)),
                           "segabert": (SegaBERTModel, _segabert(request, tmp_path, marker)),
                           "cross_thought": (CrossThoughtModel, _cross_thought(request, tmp_path, marker))}[kind]
    corpus = data if kind == "segabert" else data / "bin"
    with pytest.raises(UntrustedCheckpointError, match=f"{evil}: refused: it would import posix.mkdir.*{TRUST}=1"):
        model.from_pretrained(str(evil.parent), evil.name, str(corpus))
    assert not marker.exists()


def test_the_payload_runs_when_the_file_is_trusted(tmp_path, monkeypatch):
    """The switch loads any pickle, the payload included: the tests above would see its marker."""
    from fairseq.checkpoint_utils import load_checkpoint_file

    evil = _plant({"model": {}}, tmp_path / "evil.pt", tmp_path / "MARKER")
    monkeypatch.setenv(TRUST, "1")
    load_checkpoint_file(str(evil))
    assert (tmp_path / "MARKER").is_dir()


def test_the_ema_weights_load_through_the_same_loader(tmp_path):
    """fairseq's load_ema_from_checkpoint (its --ema models) reads the file with load_checkpoint_file: the EMA
    weights in fp32 as the model, and a planted object refused (fairseq's own test of it mocks the open and the
    torch.load that the patch replaced, so scripts/fairseq_tests.sh deselects it)."""
    from fairseq.checkpoint_utils import UntrustedCheckpointError, load_ema_from_checkpoint

    ema = {"a": torch.tensor([1]), "b": torch.tensor([0.1], dtype=torch.half)}
    torch.save({"model": {"a": torch.tensor([9])}, "extra_state": {"ema": ema}}, tmp_path / "ema.pt")
    state = load_ema_from_checkpoint(str(tmp_path / "ema.pt"))
    assert state["model"].keys() == {"a", "b"}
    assert torch.equal(state["model"]["a"], ema["a"])
    assert state["model"]["b"].dtype == torch.float32 and torch.equal(state["model"]["b"], ema["b"].float())
    evil = _plant({"extra_state": {"ema": ema}}, tmp_path / "evil.pt", tmp_path / "MARKER")
    with pytest.raises(UntrustedCheckpointError):
        load_ema_from_checkpoint(str(evil))
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("value", ["", "0", "yes", "true", "2"])
def test_a_switch_value_other_than_1_trusts_nothing_and_says_so(value, tmp_path, monkeypatch):
    from fairseq.checkpoint_utils import UntrustedCheckpointError, load_checkpoint_file

    evil = _plant({"model": {}}, tmp_path / "evil.pt", tmp_path / "MARKER")
    monkeypatch.setenv(TRUST, value)
    with pytest.raises(UntrustedCheckpointError) as refused:
        load_checkpoint_file(str(evil))
    assert not (tmp_path / "MARKER").exists()
    note = f" ({TRUST}={value} was not recognised: only 1 trusts)"
    assert str(refused.value).endswith(f"load it with {TRUST}=1" + (note if value not in ("", "0") else ""))


def test_huggingface_directory_import_prefers_model_safetensors(tmp_path):
    """With both weight files present the importers read model.safetensors and never unpickle pytorch_model.bin."""
    from safetensors.torch import save_file

    from segatron_fairseq.conversion.importers.huggingface_files import read_weights

    model, _ = _hf_directory(tmp_path, tmp_path / "MARKER", "bert")
    save_file({"w": torch.ones(2)}, str(model / "model.safetensors"))
    path, state = read_weights(str(model))
    assert path == str(model / "model.safetensors") and list(state) == ["w"]
    assert not (tmp_path / "MARKER").exists()


def _as_module(state):
    """A whole torch module (plain ``torch.nn.Module`` objects) whose state dict is ``state``."""
    root = torch.nn.Module()
    for key, value in state.items():
        *path, name = key.split(".")
        module = root
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, torch.nn.Module())
            module = getattr(module, part)
        module.register_buffer(name, value)
    return root


@pytest.mark.skipif(not AUTHORS_SEGATRON_XL.is_dir(), reason="../shared/fixtures/authors is absent")
def test_a_trusted_whole_pickled_model_imports_with_the_switch(tmp_path, monkeypatch):
    """authors-segatron-xl --state a whole pickled model: refused without the switch, imported with it, to the
    checkpoint its state dict gives."""
    from fairseq.checkpoint_utils import load_checkpoint_file

    state = load_checkpoint_file(str(AUTHORS_SEGATRON_XL / "model_state.pt"))
    torch.save(_as_module(state), tmp_path / "model.pt")
    files = ["--config", AUTHORS_SEGATRON_XL / "config.json", "--vocab", AUTHORS_SEGATRON_XL / "vocab.txt"]
    monkeypatch.delenv(TRUST, raising=False)
    out = run_cli("segatron-import", "authors-segatron-xl", "--state", tmp_path / "model.pt", *files, "--out",
                  tmp_path / "refused", expect_ok=False)
    assert f"{tmp_path / 'model.pt'}: refused: it would import torch.nn.modules.module.Module" in out
    assert not (tmp_path / "refused").exists()
    monkeypatch.setenv(TRUST, "1")
    run_cli("segatron-import", "authors-segatron-xl", "--state", tmp_path / "model.pt", *files, "--out",
            tmp_path / "whole")
    monkeypatch.delenv(TRUST)
    run_cli("segatron-import", "authors-segatron-xl", "--state", AUTHORS_SEGATRON_XL / "model_state.pt", *files,
            "--out", tmp_path / "state")
    whole, expected = (load_checkpoint_file(str(tmp_path / name / "checkpoint.pt"))["model"]
                       for name in ("whole", "state"))
    assert whole.keys() == expected.keys() and all(torch.equal(whole[k], expected[k]) for k in expected)


# each session fixture's checkpoints (under its directory's ckpt/ when it trained more than one), and 0.1.0's
CHECKPOINTS = {"segabert": "segabert_checkpoint", "segabert_bert": "segabert_bert_checkpoint",
               "segatron_xl": "segatron_xl_trained", "cross_thought": "cross_thought_trained",
               "segatron_xl_0.1.0": ROOT / "tests" / "data" / "segatron_xl_prenorm-0.1.0.pt"}


@pytest.mark.parametrize("kind", CHECKPOINTS)
def test_the_project_checkpoints_hold_only_allowed_types(kind, request):
    """What the training paths save: tensors, containers and CHECKPOINT_SAFE_GLOBALS (argparse.Namespace) only,
    so each loads with the switch off."""
    from fairseq.checkpoint_utils import CHECKPOINT_SAFE_GLOBALS, load_checkpoint_file

    allowed = {f"{t.__module__}.{t.__qualname__}" for t in CHECKPOINT_SAFE_GLOBALS}
    source = CHECKPOINTS[kind]
    source = request.getfixturevalue(source) if isinstance(source, str) else source
    paths = sorted((source / "ckpt").glob("*.pt")) if source.is_dir() else [source]
    assert paths
    for path in paths:
        assert set(torch.serialization.get_unsafe_globals_in_checkpoint(str(path))) <= allowed, path
        assert "model" in load_checkpoint_file(str(path))


def _unreadable(tmp_path, kind):
    path = tmp_path / "checkpoint.pt"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("some notes\n")
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"model": {}}))
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "truncated":
        torch.save({"model": {"w": torch.ones(100)}}, path)
        path.write_bytes(path.read_bytes()[:300])
    return path


UNREADABLE = {"missing": "checkpoint not found", "directory": "a directory, not a checkpoint file",
              "empty": "empty file, not a checkpoint", "text": "not a checkpoint (not written by torch.save",
              "pickle": "not a checkpoint (not written by torch.save",
              "truncated": "not a checkpoint (not written by torch.save, or truncated)",
              "loop": "cannot be read (Too many levels of symbolic links)"}


@pytest.mark.parametrize("kind", UNREADABLE)
def test_an_unreadable_checkpoint_is_one_line_naming_the_file(kind, tmp_path):
    from fairseq.checkpoint_utils import load_checkpoint_file

    path = _unreadable(tmp_path, kind)
    with pytest.raises((OSError, ValueError)) as raised:
        load_checkpoint_file(str(path))
    assert str(raised.value).startswith(f"{path}: {UNREADABLE[kind]}") and "\n" not in str(raised.value)


def _eval_lm(request, path):
    trained = request.getfixturevalue("segatron_xl_trained")
    return ["fairseq-eval-lm", trained / "bin", *XL_EVAL, "--path", path]


def _import_cross_thought(request, path):
    (path.parent / "dict.txt").write_text("w1 3\nw2 2\n")
    return ["segatron-import", "authors-cross-thought", "--checkpoint", path, "--dict", path.parent / "dict.txt",
            "--out", path.parent / "imported"]


@pytest.mark.parametrize("command,kind", [(_eval_lm, "truncated"), (_eval_lm, "text"), (_eval_lm, "missing"),
                                          (_eval_lm, "loop"),
                                          (_import_cross_thought, "empty"), (_import_cross_thought, "directory")],
                         ids=lambda value: getattr(value, "__name__", value))
def test_a_console_script_ends_with_one_line_on_an_unreadable_checkpoint(command, kind, request, tmp_path):
    path = _unreadable(tmp_path, kind)
    argv = command(request, path)
    out = run_cli(*argv, expect_ok=False)
    assert f"{argv[0]}: error: {path}: {UNREADABLE[kind]}" in out and "Traceback" not in out, out[-3000:]
