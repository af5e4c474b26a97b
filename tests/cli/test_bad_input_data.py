"""Binarized data that is not what segatron-preprocess wrote, through the tools that read it: a split of the same text
binarized with another dictionary copied in (its entry kept, without an entry, with the other run's metadata), an
entry without its state, a byte rewritten in a ``.bin`` (``--verify``), and manifests of the wrong shape. Each must end
with one line ``PROG: error: ...`` naming the file, a non-zero exit status, no traceback, and the data folder as it
was (fairseq-train makes its --save-dir, outside it, and writes no checkpoint there).

The data is a copy of the session's Segatron-XL corpus (``segatron_xl_trained``), the checkpoint its model; the other
dictionary's split is its valid text binarized on its own (``other_binarization``).
"""
import json
import shutil
from dataclasses import dataclass

import numpy as np
import pytest
from cli_errors import assert_refused, listing
from conftest import PLUGIN_DIR, run_cli, run_cli_refused

SPLIT_FILES = [f"valid{index}.{ext}" for index in ("", ".paragraph", ".sentence", ".token") for ext in ("bin", "idx")]


def _edit_metadata(data, change) -> None:
    path = data / "segatron_preprocess.json"
    metadata = json.loads(path.read_text())
    change(metadata)
    path.write_text(json.dumps(metadata))


def _copy_other_split(data, other) -> None:
    for name in SPLIT_FILES:
        shutil.copyfile(other / name, data / name)


def _rewrite_a_token(data, other) -> None:
    """One token id of valid.bin replaced by another id of the dictionary."""
    ids = np.fromfile(data / "valid.bin", dtype=np.uint16)
    ids[len(ids) // 2] = 4 if ids[len(ids) // 2] != 4 else 5
    ids.tofile(data / "valid.bin")


def _entry(change):
    return lambda data, other: _edit_metadata(data, lambda metadata: change(metadata["splits"]["valid"]))


# what is done to the data (a copy of the corpus; ``other``: the other dictionary's corpus)
DAMAGES = {
    "other-dictionary": _copy_other_split,
    "other-dictionary-without-entry": lambda data, other: (
        _copy_other_split(data, other), _edit_metadata(data, lambda metadata: metadata["splits"].pop("valid"))),
    "other-dictionary-and-metadata": lambda data, other: (
        _copy_other_split(data, other), shutil.copyfile(other / "segatron_preprocess.json",
                                                        data / "segatron_preprocess.json")),
    "entry-without-state": _entry(lambda entry: entry.pop("state")),
    "token-rewritten": _rewrite_a_token,
    "files-a-string": _entry(lambda entry: entry.update(files="valid.bin")),
    "splits-a-list": lambda data, other: _edit_metadata(data, lambda metadata: metadata.update(splits=["valid"])),
    "size-null": _entry(lambda entry: entry["files"].update({"valid.bin": None})),
    "size-a-string": _entry(lambda entry: entry["files"].update({"valid.bin": str(entry["files"]["valid.bin"])})),
}

# what the error line says, after the file it names
SAYS = {
    "other-dictionary": "{data}/valid.bin: not the bytes segatron-preprocess wrote (sha256 of sampled blocks",
    "other-dictionary-without-entry": "{data}/segatron_preprocess.json has no entry for split 'valid'",
    "other-dictionary-and-metadata": "{data}/dict.txt is not the dict.txt split {data}/valid was binarized with",
    "entry-without-state": "{data}/segatron_preprocess.json: splits.valid.state is missing",
    "token-rewritten": "{data}/valid.bin: not the bytes segatron-preprocess wrote (sha256 of the whole file",
    "files-a-string": "{data}/segatron_preprocess.json: splits.valid.files is a string ('valid.bin'), not an object",
    "splits-a-list": "{data}/segatron_preprocess.json: splits is a list, not an object",
    "size-null": "{data}/segatron_preprocess.json: splits.valid.files.valid.bin is null, not a size in bytes",
    "size-a-string": "{data}/segatron_preprocess.json: splits.valid.files.valid.bin is a string ('",
}

PROGRAMS = {
    "inspect": ("segatron-inspect", "{data} valid 3"),
    "inspect-verify": ("segatron-inspect", "{data} valid 3 --verify"),
    "eval-lm": ("fairseq-eval-lm", "{data} --user-dir {plugin} --task segatron_lm --path {checkpoint} --gen-subset "
                "valid --cpu --tgt-len 16"),
    "eval-lm-verify": ("fairseq-eval-lm", "{data} --user-dir {plugin} --task segatron_lm --path {checkpoint} "
                       "--gen-subset valid --cpu --tgt-len 16 --verify-data"),
    "train": ("fairseq-train", "{data} --user-dir {plugin} --task segatron_lm --arch segatron_xl_tiny --criterion "
              "segatron_lm_loss --optimizer adam --lr 1e-3 --cpu --batch-size 2 --tgt-len 16 --max-update 1 "
              "--save-dir {save_dir}"),
    "preprocess": ("segatron-preprocess", "--input-format wikitext --validpref {text} --destdir {data}"),
}


@dataclass(frozen=True)
class Case:
    """``PROGRAMS[program]`` on the data after ``DAMAGES[damage]`` must fail with one line saying ``SAYS[damage]``
    (``says``, when given, instead)."""

    program: str
    damage: str
    says: str = ""


CASES = [Case(program, damage) for damage in ("other-dictionary", "other-dictionary-without-entry",
                                              "other-dictionary-and-metadata", "entry-without-state")
         for program in ("inspect", "eval-lm")]
CASES += [Case(program, "token-rewritten") for program in ("inspect-verify", "eval-lm-verify")]
CASES += [Case(program, damage) for damage in ("files-a-string", "splits-a-list", "size-null", "size-a-string")
          for program in ("inspect", "eval-lm", "train")]
CASES += [Case("preprocess", "splits-a-list", "{data}/segatron_preprocess.json: splits is a list, not an object "
                                              "(split name -> manifest); the file was edited or damaged; --destdir "
                                              "must be a segatron-preprocess directory")]


@pytest.fixture(scope="module")
def other_binarization(segatron_xl_trained, tmp_path_factory):
    """The corpus's valid text binarized on its own: the same items in files of the same sizes, with another
    dictionary."""
    other = tmp_path_factory.mktemp("other_dictionary") / "bin"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", segatron_xl_trained / "valid.txt",
            "--validpref", segatron_xl_trained / "valid.txt", "--destdir", other)
    assert (other / "dict.txt").read_bytes() != (segatron_xl_trained / "bin" / "dict.txt").read_bytes()
    for name in SPLIT_FILES:
        assert (other / name).stat().st_size == (segatron_xl_trained / "bin" / name).stat().st_size
    return other


@pytest.mark.end_to_end
@pytest.mark.parametrize("case", CASES, ids=[f"{case.program}-{case.damage}" for case in CASES])
def test_damaged_data_ends_in_one_line_naming_it(case, segatron_xl_trained, other_binarization, tmp_path):
    folder = tmp_path / "work"
    data = folder / "bin"
    shutil.copytree(segatron_xl_trained / "bin", data)
    shutil.copyfile(segatron_xl_trained / "valid.txt", folder / "valid.txt")
    DAMAGES[case.damage](data, other_binarization)
    before = listing(folder)
    program, args = PROGRAMS[case.program]
    paths = dict(data=data, plugin=PLUGIN_DIR, checkpoint=segatron_xl_trained / "ckpt" / "checkpoint_last.pt",
                 save_dir=tmp_path / "ckpt", text=folder / "valid.txt")
    refusal = run_cli_refused(program, *args.format(**paths).split(), cwd=folder)
    line = assert_refused(refusal, program)
    assert (case.says or SAYS[case.damage]).format(data=data) in line, line
    assert listing(folder) == before, "the data folder changed"
    assert not list(tmp_path.glob("ckpt/*.pt"))


@pytest.mark.end_to_end
def test_the_same_tools_read_the_data_as_written(segatron_xl_trained, tmp_path):
    """The cases' commands succeed on the undamaged copy (so what refuses them is the damage)."""
    data = tmp_path / "bin"
    shutil.copytree(segatron_xl_trained / "bin", data)
    paths = dict(data=data, plugin=PLUGIN_DIR, checkpoint=segatron_xl_trained / "ckpt" / "checkpoint_last.pt",
                 save_dir=tmp_path / "ckpt", text=segatron_xl_trained / "valid.txt")
    for name in ("inspect-verify", "eval-lm-verify", "train"):
        program, args = PROGRAMS[name]
        run_cli(program, *args.format(**paths).split())
