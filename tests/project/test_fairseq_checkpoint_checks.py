"""What the fairseq patch checks before a checkpoint is read or its model built, and how it saves one: a path that
is not a regular file is refused before it is opened (a FIFO would block), a ``model`` entry that is not tensors,
a configuration that builds a model far larger than the file's tensors (built on the meta device: nothing
allocated), parameters missing or extra, an option below its field's minimum; checkpoints are copied atomically
(a kill mid-copy leaves the old file whole), a damaged one has the newest intact checkpoint beside it named, and
the save directory is checked without touching its files."""
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest
import torch
from torch import nn


def _checkpoint(path, **model):
    """A small torch.save archive at ``path`` whose ``model`` entry is ``model`` (default: one tensor)."""
    torch.save({"model": model or {"w": torch.arange(1000.0)}}, path)
    return path


# ---- paths that are not regular files -------------------------------------------------------------------------

def _end_a_blocked_read(fifo):
    """A reader blocked opening ``fifo`` reads an empty file instead; with no reader, nothing happens."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader
        pass


def test_a_fifo_is_refused_before_it_is_opened(tmp_path):
    """Opening a FIFO for reading blocks until a writer comes: the check names it without opening it (a read that
    blocks anyway is ended after a minute, so that the test fails rather than hangs)."""
    from fairseq.checkpoint_utils import CheckpointFileError, load_checkpoint_file

    fifo = tmp_path / "checkpoint.pt"
    os.mkfifo(fifo)
    guard = threading.Timer(60, _end_a_blocked_read, [str(fifo)])
    guard.start()
    try:
        with pytest.raises(CheckpointFileError, match=f"^{fifo}: a FIFO or pipe, not a regular file"):
            load_checkpoint_file(str(fifo))
    finally:
        guard.cancel()


def test_a_pipe_is_named_as_one_not_as_an_empty_file(tmp_path):
    """``--checkpoint <(cat ck.pt)`` gives /dev/fd/N, a pipe whose size is 0: it is a pipe, not an empty file."""
    from fairseq.checkpoint_utils import CheckpointFileError, load_checkpoint_file

    read, write = os.pipe()
    try:
        os.write(write, _checkpoint(tmp_path / "ck.pt").read_bytes()[:4096])
        with pytest.raises(CheckpointFileError, match=f"^/dev/fd/{read}: a FIFO or pipe, not a regular file"):
            load_checkpoint_file(f"/dev/fd/{read}")
    finally:
        os.close(read)
        os.close(write)


def test_the_hub_check_of_a_checkpoint_path_is_the_loaders(tmp_path):
    """segatron-loss-by-boundary checks every checkpoint before scoring the first: a FIFO is named as one (it was
    "checkpoint not found")."""
    from segatron_fairseq.hub.checkpoints import check_checkpoint_file

    os.mkfifo(tmp_path / "fifo.pt")
    with pytest.raises(ValueError, match="fifo.pt: a FIFO or pipe, not a regular file"):
        check_checkpoint_file(str(tmp_path / "fifo.pt"))
    with pytest.raises(FileNotFoundError, match="missing.pt: checkpoint not found"):
        check_checkpoint_file(str(tmp_path / "missing.pt"))
    check_checkpoint_file(str(_checkpoint(tmp_path / "ck.pt")))


# ---- the model entry, its names and its size ------------------------------------------------------------------

@pytest.mark.parametrize("model,says", [(7, "its 'model' entry is of type int, not the model's tensors by name"),
                                        ({"w": 3}, "its parameter w is of type int, not a tensor")])
def test_a_model_entry_that_is_not_tensors_is_refused_when_read(tmp_path, model, says):
    from fairseq.checkpoint_utils import CheckpointFileError, load_checkpoint_to_cpu

    path = tmp_path / "ck.pt"
    torch.save({"model": model}, path)
    with pytest.raises(CheckpointFileError, match=f"^{path}: {says}"):
        load_checkpoint_to_cpu(str(path))


class _Task:
    """What the checks read of a fairseq task: ``build_model`` (an embedding of ``cfg.rows`` x ``cfg.dim`` and
    ``cfg.layers`` linear layers), its data and dictionary."""

    cfg = SimpleNamespace(data="")
    source_dictionary = list(range(10))

    def build_model(self, cfg, from_checkpoint=False):
        return nn.Sequential(nn.Embedding(cfg.rows, cfg.dim), *(nn.Linear(cfg.dim, cfg.dim) for _ in range(cfg.layers)))


def _state(rows=10, dim=8, layers=1):
    return _Task().build_model(SimpleNamespace(rows=rows, dim=dim, layers=layers)).state_dict()


def test_a_configuration_far_larger_than_its_tensors_is_refused_before_allocating():
    """A width of 2^20 (a linear layer of 4 TiB) is built on the meta device only: the first parameter of another
    shape is named."""
    from fairseq.checkpoint_utils import CheckpointFileError, check_model_size

    with pytest.raises(CheckpointFileError, match=r"^ck.pt: 0.weight has shape \(10, 8\) in the checkpoint but "
                                                  r"\(10, 1048576\) in the model"):
        check_model_size("ck.pt", _Task(), SimpleNamespace(rows=10, dim=1 << 20, layers=1), _state())


def test_a_configuration_with_many_more_layers_is_refused_by_its_size():
    """Shapes that agree but 1,000 more layers than the file holds: the counts are named."""
    from fairseq.checkpoint_utils import CheckpointFileError, check_model_size

    built = 10 * 8 + 1001 * (8 * 8 + 8)
    with pytest.raises(CheckpointFileError, match=f"^ck.pt: its configuration builds a model of {built:,} values, "
                                                  f"more than twice the {10 * 8 + 72:,} its tensors hold"):
        check_model_size("ck.pt", _Task(), SimpleNamespace(rows=10, dim=8, layers=1001), _state())


def test_a_configuration_of_its_own_size_or_a_little_more_passes():
    """The checkpoint's own configuration, and one that adds a little (a head, appended rows): built as usual."""
    from fairseq.checkpoint_utils import check_model_size

    check_model_size("ck.pt", _Task(), SimpleNamespace(rows=10, dim=8, layers=1), _state())
    check_model_size("ck.pt", _Task(), SimpleNamespace(rows=12, dim=8, layers=2), _state())


@pytest.mark.parametrize("layers,state,says", [
    (1, {k: v for k, v in _state().items() if k != "1.bias"}, "lacks 1.bias of the model its configuration builds"),
    (1, {**_state(), "2.weight": torch.zeros(1)}, "holds 2.weight, which that model does not have"),
    (5, {k: v for k, v in _state().items() if k.startswith("0.")},
     "lacks 1.weight, 1.bias, 2.weight and 7 more of the model its configuration builds"),
    (1, {"0.weight": torch.zeros(10, 8), "0.bias": torch.zeros(8)},
     "lacks 1.weight, 1.bias of the model its configuration builds; it holds 0.bias, which that model does not have"),
])
def test_missing_and_extra_parameters_are_named(layers, state, says):
    from fairseq.checkpoint_utils import CheckpointFileError, check_parameter_names

    model = _Task().build_model(SimpleNamespace(rows=10, dim=8, layers=layers))
    with pytest.raises(RuntimeError):
        model.load_state_dict(state)
    with pytest.raises(CheckpointFileError, match=f"^ck.pt: {says}$"):
        check_parameter_names("ck.pt", model, state)


# ---- option bounds -------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Options:
    tgt_len: int = dataclasses.field(default=150, metadata={"help": "tokens per row", "min": 1})
    mem_len: int = dataclasses.field(default=150, metadata={"min": 0})
    clamp_len: int = -1


@pytest.mark.parametrize("values,says", [(dict(tgt_len=0), "--tgt-len 0: must be at least 1 (tokens per row)"),
                                         (dict(mem_len=-5), "--mem-len -5: must be at least 0")])
def test_an_option_below_its_fields_minimum_is_named(values, says):
    from fairseq.dataclass.utils import OptionValueError, check_field_bounds

    with pytest.raises(OptionValueError) as refused:
        check_field_bounds(_Options, _Options(**values))
    assert str(refused.value) == says


def test_options_within_their_bounds_and_fields_without_one_pass():
    from fairseq.dataclass.utils import check_field_bounds

    check_field_bounds(_Options, _Options(tgt_len=1, mem_len=0, clamp_len=-100))
    check_field_bounds(None, _Options(tgt_len=-1))


# ---- saving and the intact checkpoint beside a damaged one ----------------------------------------------------

def test_an_interrupted_copy_leaves_the_destination_as_it_was(tmp_path, monkeypatch):
    from fairseq import checkpoint_utils

    old = _checkpoint(tmp_path / "checkpoint_last.pt", w=torch.zeros(3)).read_bytes()
    new = _checkpoint(tmp_path / "checkpoint_1_8.pt")

    def half_then_die(source, destination, *args):
        destination.write(source.read(100))
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "copyfileobj", half_then_die)
    with pytest.raises(KeyboardInterrupt):
        checkpoint_utils.copy_atomically(str(new), str(tmp_path / "checkpoint_last.pt"))
    assert (tmp_path / "checkpoint_last.pt").read_bytes() == old
    monkeypatch.undo()
    checkpoint_utils.copy_atomically(str(new), str(tmp_path / "checkpoint_last.pt"))
    assert (tmp_path / "checkpoint_last.pt").read_bytes() == new.read_bytes()
    assert not (tmp_path / "checkpoint_last.pt.tmp").exists()


def test_the_newest_intact_checkpoint_is_found_past_damaged_ones(tmp_path):
    from fairseq.checkpoint_utils import is_intact, newest_intact_checkpoint

    older, newer = _checkpoint(tmp_path / "checkpoint_1_4.pt"), _checkpoint(tmp_path / "checkpoint_1_8.pt")
    truncated = tmp_path / "checkpoint_1_12.pt"
    truncated.write_bytes(newer.read_bytes()[:-200])
    flipped = bytearray(newer.read_bytes())
    flipped[len(flipped) // 2] ^= 0xFF  # a changed byte inside the tensor's data: its checksum fails
    (tmp_path / "checkpoint_best.pt").write_bytes(bytes(flipped))
    (tmp_path / "checkpoint_last.pt").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    for age, path in enumerate([truncated, tmp_path / "checkpoint_best.pt", newer, older]):
        os.utime(path, (1e9 - age * 100, 1e9 - age * 100))
    assert not is_intact(truncated) and not is_intact(tmp_path / "checkpoint_best.pt") and is_intact(newer)
    assert newest_intact_checkpoint(str(tmp_path), str(tmp_path / "checkpoint_last.pt")) == str(newer)
    assert newest_intact_checkpoint(str(tmp_path), str(newer)) == str(older)
    for path in (newer, older):
        path.unlink()
    assert newest_intact_checkpoint(str(tmp_path), str(tmp_path / "checkpoint_last.pt")) is None


def test_checking_the_save_directory_leaves_its_files_alone(tmp_path):
    """fairseq-train checks that --save-dir is writable before anything else: a file of the user's named
    ``dummy`` (the name it wrote and removed) is left as it was."""
    from fairseq.checkpoint_utils import verify_checkpoint_directory

    (tmp_path / "dummy").write_text("my notes\n")
    verify_checkpoint_directory(str(tmp_path))
    assert os.listdir(tmp_path) == ["dummy"] and (tmp_path / "dummy").read_text() == "my notes\n"
    verify_checkpoint_directory(str(tmp_path / "new" / "save"))
    assert os.listdir(tmp_path / "new" / "save") == []


# fairseq's save_checkpoint with a trainer that writes a checkpoint; once that is written, the process may write no
# file longer than half of it, and the signal of a write past that (SIGXFSZ, which Python ignores) kills it: the copy
# onto checkpoint_last.pt is killed in the middle
KILLED_SAVE = textwrap.dedent("""
    import os, resource, signal, sys
    from types import SimpleNamespace
    import torch
    from fairseq import checkpoint_utils
    from fairseq.dataclass.configs import CheckpointConfig

    def save(filename, extra_state):
        checkpoint_utils.torch_persistent_save({"model": {"w": torch.ones(250_000)}, "extra": extra_state}, filename)
        size = os.path.getsize(filename)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)

    trainer = SimpleNamespace(data_parallel_rank=0, consolidate_optimizer=lambda: None,
                              should_save_checkpoint_on_current_rank=True, get_num_updates=lambda: 8,
                              checkpoint_suffix="", save_checkpoint=save)
    epoch_itr = SimpleNamespace(epoch=1, end_of_epoch=lambda: False, state_dict=lambda: {})
    cfg = CheckpointConfig(save_dir=sys.argv[1], save_interval_updates=8, no_epoch_checkpoints=True)
    checkpoint_utils.save_checkpoint(cfg, trainer, epoch_itr, None)
""")


@pytest.mark.end_to_end
def test_a_save_killed_while_copying_leaves_checkpoint_last_whole(tmp_path):
    """fairseq copied the new checkpoint over checkpoint_last.pt in place: killed in the middle, it was left cut
    short. The copy is now made beside it and renamed over it."""
    from fairseq.checkpoint_utils import load_checkpoint_file

    old = _checkpoint(tmp_path / "checkpoint_last.pt", w=torch.zeros(3)).read_bytes()
    run = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == -signal.SIGXFSZ, run.stderr[-3000:]  # killed while writing
    assert load_checkpoint_file(str(tmp_path / "checkpoint_1_8.pt"))["model"]["w"].shape == (250_000,)
    assert (tmp_path / "checkpoint_last.pt").read_bytes() == old
