"""The console scripts and fairseq's tools against damaged checkpoints, damaged safetensors and absurd options
(issue 45): each ends with one line on stderr (``PROG: error: ...`` naming the file or option), a non-zero exit
status, no traceback, and every file in the test's folder as it was, as in ``test_bad_input.py``.

A case names what it needs and builds its arguments from these paths (the session's tiny trained models):
``{xl}`` / ``{xl_data}`` (the Segatron-XL checkpoint and its corpus) and its damaged copies ``{bomb}`` (its
configuration says ``decoder_embed_dim`` 2^20), ``{missing_param}`` (one parameter less), ``{extra_param}`` (one
more), ``{model_int}`` (its ``model`` entry an int); ``{fifo}`` (a FIFO: nothing ever writes to it), ``{pipe}``
(``/dev/fd/N`` of a pipe, what ``<(cat ck.pt)`` gives); ``{hf_DAMAGE}`` (a Hugging Face directory whose
``model.safetensors`` has a header length of 2^62, a header that is not JSON, is truncated, or has a shape that its
data does not fill); ``{segabert_data}``; ``{here}`` (the folder: fairseq-train's --save-dir, where it writes and
removes a file ``dummy`` before anything else); ``{out}`` (an output path in the folder). ``resume`` makes the
folder a save directory whose ``checkpoint_last.pt`` is empty beside an intact ``checkpoint_1_30.pt``.
"""
import copy
import os
import shutil
import struct
import threading
from pathlib import Path
from typing import Optional

import pytest
import torch
from cli_errors import Case, assert_refused, listing
from conftest import PLUGIN_DIR, run_cli_refused

XL = ("segatron_xl_trained",)
EXPORT = "hf --checkpoint CHECKPOINT --data {xl_data} --out {out}"
EVAL_LM = ("{xl_data} --user-dir " + str(PLUGIN_DIR) + " --task segatron_lm --cpu --tgt-len 16 --path CHECKPOINT "
           "--gen-subset valid")
BOUNDARY = "CHECKPOINT --data {xl_data} --split valid"
TRAIN = ("--user-dir " + str(PLUGIN_DIR) + " --optimizer adam --lr 1e-3 --cpu --batch-size 4 --max-update 1 "
         "--save-dir {here}")
TRAIN_XL = "{xl_data} --task segatron_lm --arch segatron_xl_tiny --criterion segatron_lm_loss --tgt-len 16 " + TRAIN
TRAIN_SEGABERT = ("{segabert_data} --task segabert_mlm --arch segabert_tiny --criterion masked_lm "
                  "--tokens-per-sample 32 " + TRAIN)
NOT_REGULAR = "a FIFO or pipe, not a regular file"
BOMB = "decoder.embed_tokens.weight has shape ({rows}, {width}) in the checkpoint but ({rows}, 1048576)"
DAMAGED_SAFETENSORS = "model.safetensors: not a whole safetensors file"

CASES = {}
for tool, program, args in (("export", "segatron-export", EXPORT), ("eval-lm", "fairseq-eval-lm", EVAL_LM),
                            ("loss-by-boundary", "segatron-loss-by-boundary", BOUNDARY)):
    CASES.update({
        f"{tool}-fifo": Case(program, args.replace("CHECKPOINT", "{fifo}"), f"fifo.pt: {NOT_REGULAR}", XL),
        f"{tool}-pipe": Case(program, args.replace("CHECKPOINT", "{pipe}"), f"{{pipe}}: {NOT_REGULAR}", XL),
        f"{tool}-config-too-large": Case(program, args.replace("CHECKPOINT", "{bomb}"), f"bomb.pt: {BOMB}", XL),
        f"{tool}-missing-parameter": Case(program, args.replace("CHECKPOINT", "{missing_param}"),
                                          "missing_param.pt: lacks decoder.content_bias of the model", XL),
        f"{tool}-extra-parameter": Case(program, args.replace("CHECKPOINT", "{extra_param}"),
                                        "extra_param.pt: holds decoder.extra.weight, which that model does not",
                                        XL),
        f"{tool}-model-entry-int": Case(program, args.replace("CHECKPOINT", "{model_int}"),
                                        "model_int.pt: its 'model' entry is of type int", XL),
    })
for damage in ("header_too_long", "header_not_json", "truncated", "shape_lies"):
    CASES[f"import-hf-bert-{damage}"] = Case("segatron-import", f"hf-bert --model-dir {{hf_{damage}}} --out {{out}}",
                                             f"hf_{damage}/{DAMAGED_SAFETENSORS}", ("safetensors",))
CASES.update({
    "import-hf-xlnet-truncated": Case("segatron-import", "hf-xlnet --model-dir {hf_truncated} --out {out}",
                                      f"hf_truncated/{DAMAGED_SAFETENSORS}", ("safetensors",)),
    "train-resume-from-a-damaged-checkpoint": Case(
        "fairseq-train", TRAIN_XL, "checkpoint_last.pt: empty file, not a checkpoint; checkpoint_1_30.pt is intact: "
        "pass --restore-file {here}/checkpoint_1_30.pt to resume from it", (*XL, "resume")),
    "train-tgt-len-negative": Case("fairseq-train", TRAIN_XL + " --tgt-len -16", "--tgt-len -16: must be at least 1",
                                   XL),
    "train-tgt-len-huge": Case("fairseq-train", TRAIN_XL + " --tgt-len 1000000000",
                               "--tgt-len 1000000000: more than the model reads in one segment, 1048576", XL),
    "train-tgt-len-not-an-integer": Case("fairseq-train", TRAIN_XL + " --tgt-len 1e9",
                                         "argument --tgt-len: invalid int value: '1e9'", XL),
    "train-mem-len-negative": Case("fairseq-train", TRAIN_XL + " --mem-len -5", "--mem-len -5: must be at least 0",
                                   XL),
    "eval-lm-tgt-len-negative": Case("fairseq-eval-lm", EVAL_LM.replace("CHECKPOINT", "{xl}") + " --tgt-len -16",
                                     "--tgt-len -16: must be at least 1", XL),
    "train-max-positions-below-the-sample": Case(
        "fairseq-train", TRAIN_SEGABERT + " --max-positions 8",
        "--max-positions 8: less than --tokens-per-sample 32; the model must read a whole example",
        ("segabert_corpus",)),
    "train-tokens-per-sample-1": Case("fairseq-train", TRAIN_SEGABERT + " --tokens-per-sample 1",
                                      "--tokens-per-sample 1: must be at least 3", ("segabert_corpus",)),
})


@pytest.fixture(scope="module")
def damaged_checkpoints(segatron_xl_trained, tmp_path_factory) -> dict:
    """The damaged copies of the trained Segatron-XL checkpoint the module doc names, written once: {name: path};
    ``rows`` and ``width``: the shape of its token table."""
    folder = tmp_path_factory.mktemp("damaged_checkpoints")
    state = torch.load(segatron_xl_trained / "ckpt" / "checkpoint_last.pt", weights_only=True)
    copies = {"bomb": lambda state: state["cfg"]["model"].__setitem__("decoder_embed_dim", 1 << 20),
              "missing_param": lambda state: state["model"].pop("decoder.content_bias"),
              "extra_param": lambda state: state["model"].__setitem__("decoder.extra.weight", torch.zeros(3)),
              "model_int": lambda state: state.__setitem__("model", 7)}
    paths = {}
    for name, damage in copies.items():
        damaged = copy.deepcopy(state)
        damage(damaged)
        torch.save(damaged, folder / f"{name}.pt")
        paths[name] = folder / f"{name}.pt"
    paths["rows"], paths["width"] = state["model"]["decoder.embed_tokens.weight"].shape
    return paths


def _safetensors_directories(folder: Path) -> dict:
    """``hf_DAMAGE``: a directory with a config.json (a BERT's, an XLNet's) and a damaged model.safetensors."""
    from safetensors.torch import save

    whole = save({"a": torch.zeros(4, 4), "b": torch.ones(3)})
    length = struct.unpack("<Q", whole[:8])[0]
    header, data = whole[8:8 + length], whole[8 + length:]
    lying = header.replace(b"[4,4]", b"[40,40]")
    assert lying != header
    damaged = {"header_too_long": struct.pack("<Q", 1 << 62) + header + data,
               "header_not_json": struct.pack("<Q", length) + b"{" * length + data,
               "truncated": whole[:-10],
               "shape_lies": struct.pack("<Q", len(lying)) + lying + data}
    paths = {}
    for name, contents in damaged.items():
        directory = folder / f"hf_{name}"
        directory.mkdir()
        (directory / "config.json").write_text("{}")
        (directory / "model.safetensors").write_bytes(contents)
        paths[f"hf_{name}"] = str(directory)
    return paths


def _inputs(folder: Path, request, needs, stack) -> dict:
    """The paths a case's arguments name (see the module doc), written into ``folder``; ``stack``: what to undo at
    the end of the test (the pipe's descriptors)."""
    paths = {"here": str(folder), "out": str(folder / "out")}
    if "segatron_xl_trained" in needs:
        trained = request.getfixturevalue("segatron_xl_trained")
        checkpoint = trained / "ckpt" / "checkpoint_last.pt"
        paths.update(xl=str(checkpoint), xl_data=str(trained / "bin"))
        if "resume" in needs:
            shutil.copy(checkpoint, folder / "checkpoint_1_30.pt")
            (folder / "checkpoint_last.pt").write_bytes(b"")
        else:
            for name, value in request.getfixturevalue("damaged_checkpoints").items():
                paths[name] = shutil.copy(value, folder) if isinstance(value, Path) else value
            os.mkfifo(folder / "fifo.pt")
            paths["fifo"] = str(folder / "fifo.pt")
            read, write = os.pipe()
            stack.extend([read, write])
            paths["pipe"] = f"/dev/fd/{read}"
    if "segabert_corpus" in needs:
        paths["segabert_data"] = str(request.getfixturevalue("segabert_corpus"))
    if "safetensors" in needs:
        paths.update(_safetensors_directories(folder))
    return paths


def _end_a_blocked_read(fifo: Optional[str]) -> None:
    """A reader blocked opening ``fifo`` (what the tools did) reads an empty file instead, so that the test fails
    rather than hangs; with no reader, or no FIFO, nothing happens."""
    if fifo is None:
        return
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader
        pass


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_damaged_checkpoint_or_an_absurd_option_ends_in_one_line_naming_it(case, tmp_path, request):
    folder = tmp_path / "work"
    folder.mkdir()
    descriptors = []
    paths = _inputs(folder, request, case.needs, descriptors)
    before = listing(folder)
    guard = threading.Timer(60, _end_a_blocked_read, [paths.get("fifo")])
    guard.start()
    try:
        refusal = run_cli_refused(case.program, *case.args.format(**paths).split(), cwd=folder)
    finally:
        guard.cancel()
        for descriptor in descriptors:
            os.close(descriptor)
    assert_refused(refusal, case.program, case.says.format(**paths))
    assert listing(folder) == before, "the folder changed"
