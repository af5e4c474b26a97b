"""A split's manifest: the digests the binarizer writes (``output.py``, ``digests.py``) and what opening a split checks
against them (``manifest.py``): the shape of its entry, the dictionary and splitter files it was binarized with, the
sampled blocks of its files on every open and the whole files with ``verify``; directories of 0.1.0 and 0.2.0 read
after one warning."""
import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

DATA = Path(__file__).resolve().parents[1] / "data"  # tests/data
TEXT = DATA / "corpus-0.1.0" / "valid.txt"
NAMES = [f"valid{index}.{ext}" for index in ("", ".paragraph", ".sentence", ".token") for ext in ("bin", "idx")]


@pytest.fixture(scope="module")
def binarized(tmp_path_factory):
    """The 0.1.0 corpus's valid text binarized today as train (Punkt trained on it, saved in punkt_tab/) and
    valid."""
    dest = tmp_path_factory.mktemp("manifest") / "bin"
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", TEXT, "--validpref", TEXT,
            "--destdir", dest)
    return dest


@pytest.fixture
def dest(binarized, tmp_path):
    """A copy of ``binarized`` to damage."""
    shutil.copytree(binarized, tmp_path / "bin")
    return tmp_path / "bin"


@pytest.fixture
def warned(monkeypatch):
    """The directories warned about so far: none, for this test."""
    from segatron_preprocess import manifest

    monkeypatch.setattr(manifest, "_warned", set())


def _open(prefix, verify=False):
    from segatron_preprocess.split_reader import SplitReader

    return SplitReader(str(prefix), verify=verify)


def _edit_metadata(dest, change):
    path = dest / "segatron_preprocess.json"
    metadata = json.loads(path.read_text())
    change(metadata)
    path.write_text(json.dumps(metadata))


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_the_binarizer_records_the_digests_of_each_file_and_of_its_resources(binarized):
    entry = json.loads((binarized / "segatron_preprocess.json").read_text())["splits"]["valid"]
    assert entry["state"] == "complete"
    assert entry["files"] == {name: (binarized / name).stat().st_size for name in NAMES}
    assert entry["sha256"] == {name: _sha256(binarized / name) for name in NAMES}
    assert entry["sampled_sha256"] == entry["sha256"]  # files under 16 blocks are sampled whole
    punkt = sorted(p.relative_to(binarized).as_posix() for p in (binarized / "punkt_tab").rglob("*") if p.is_file())
    assert punkt and sorted(entry["resources"]) == sorted(["dict.txt", *punkt])
    assert entry["resources"] == {name: _sha256(binarized / name) for name in entry["resources"]}


def test_sampled_blocks_cover_a_large_file_from_its_first_to_its_last_byte(tmp_path):
    from segatron_preprocess.digests import SAMPLE_BLOCK_BYTES, SAMPLE_BLOCKS, sample_offsets, sampled_sha256

    assert sample_offsets(SAMPLE_BLOCKS * SAMPLE_BLOCK_BYTES) == [0]
    size = 10 * SAMPLE_BLOCKS * SAMPLE_BLOCK_BYTES + 3
    offsets = sample_offsets(size)
    assert len(offsets) == SAMPLE_BLOCKS and offsets[0] == 0 and offsets[-1] == size - SAMPLE_BLOCK_BYTES
    data = bytes(range(256)) * (size // 256) + b"end"
    (tmp_path / "f").write_bytes(data)
    blocks = b"".join(data[offset:offset + SAMPLE_BLOCK_BYTES] for offset in offsets)
    assert sampled_sha256(str(tmp_path / "f")) == hashlib.sha256(blocks).hexdigest()


def _large_split(directory: Path):
    """Eight files of 2 MiB as split ``DIR/valid`` with their manifest (no resources): ``check_contents`` reads
    nothing else."""
    from segatron_preprocess.manifest import SplitManifest
    from segatron_preprocess.output import split_manifest

    directory.mkdir()
    for k, name in enumerate(NAMES):
        (directory / name).write_bytes(bytes([k]) * (2 << 20))
    return SplitManifest(str(directory / "valid"), str(directory / "segatron_preprocess.json"),
                         split_manifest(str(directory / "valid"), {}))


def test_a_byte_changed_between_sampled_blocks_is_found_by_verify_only(tmp_path):
    from segatron_preprocess.digests import SAMPLE_BLOCK_BYTES
    from segatron_preprocess.manifest import check_contents
    from segatron_preprocess.split_error import SplitFileError

    manifest = _large_split(tmp_path / "bin")
    check_contents(manifest, verify=True)
    path = tmp_path / "bin" / "valid.sentence.bin"
    data = bytearray(path.read_bytes())
    data[SAMPLE_BLOCK_BYTES + 1] ^= 1  # after the first block, before the second
    path.write_bytes(bytes(data))
    check_contents(manifest)
    with pytest.raises(SplitFileError, match=rf"^{path}: not the bytes segatron-preprocess wrote \(sha256 of the "
                                             r"whole file [0-9a-f]{12}, its manifest in .* records"):
        check_contents(manifest, verify=True)
    data[0] ^= 1  # in the first block
    path.write_bytes(bytes(data))
    with pytest.raises(SplitFileError, match=rf"^{path}: not the bytes .*\(sha256 of sampled blocks"):
        check_contents(manifest)


def test_a_split_opens_and_verifies(dest, warned, caplog):
    with caplog.at_level(logging.WARNING):
        assert len(_open(dest / "valid", verify=True)) == len(_open(dest / "train"))
    assert not caplog.records


def test_a_rewritten_token_is_refused_when_the_split_is_opened(dest):
    from segatron_preprocess.split_error import SplitFileError

    data = bytearray((dest / "valid.bin").read_bytes())
    data[2], data[4] = data[4], data[2]  # two token ids swapped: sizes and ids all valid
    assert data != (dest / "valid.bin").read_bytes()
    (dest / "valid.bin").write_bytes(bytes(data))
    with pytest.raises(SplitFileError, match=rf"{dest / 'valid.bin'}: not the bytes segatron-preprocess wrote"):
        _open(dest / "valid")


@pytest.mark.parametrize("name", ["dict.txt", "punkt_tab/sent_starters.txt"])
def test_a_replaced_or_missing_resource_is_refused(dest, name):
    """The dictionary and the splitter the split was binarized with are its directory's."""
    from segatron_preprocess.split_error import SplitFileError

    path = dest / name
    path.write_text(path.read_text() + "extra 1\n")
    with pytest.raises(SplitFileError, match=rf"^{path} is not the {name} split {dest / 'valid'} was binarized with "
                                             r"\(sha256 [0-9a-f]{12}, its manifest in .* records [0-9a-f]{12}\)"):
        _open(dest / "valid")
    path.unlink()
    with pytest.raises(SplitFileError, match=rf"^{path}: missing, but split {dest / 'valid'} was binarized with it"):
        _open(dest / "valid")


def _set(path, value):
    """A change of the metadata: the value at ``path`` (keys) set to ``value``."""
    def change(metadata):
        *parents, last = path
        for key in parents:
            metadata = metadata[key]
        metadata[last] = value
    return change


def _remove(path):
    def change(metadata):
        *parents, last = path
        for key in parents:
            metadata = metadata[key]
        del metadata[last]
    return change


VALID = ("splits", "valid")
# what is done to the metadata -> what the one line says after "DEST/segatron_preprocess.json"
BAD_MANIFESTS = {
    "splits-a-list": (_set(("splits",), ["valid"]), ": splits is a list, not an object"),
    "entry-a-string": (_set(VALID, "complete"), ": splits.valid is a string ('complete'), not an object"),
    "no-entry": (_remove(VALID), " has no entry for split 'valid': the files of"),
    "no-state": (_remove((*VALID, "state")), ": splits.valid.state is missing"),
    "state-a-number": (_set((*VALID, "state"), 1), ": splits.valid.state is a number (1), not a string"),
    "files-a-string": (_set((*VALID, "files"), "valid.bin"),
                       ": splits.valid.files is a string ('valid.bin'), not an object"),
    "size-null": (_set((*VALID, "files", "valid.bin"), None), ": splits.valid.files.valid.bin is null, not a size"),
    "size-a-string": (_set((*VALID, "files", "valid.bin"), "1456"),
                      ": splits.valid.files.valid.bin is a string ('1456'), not a size in bytes"),
    "size-negative": (_set((*VALID, "files", "valid.bin"), -1), ": splits.valid.files.valid.bin is a number (-1)"),
    "a-file-left-out": (_remove((*VALID, "files", "valid.token.idx")), ": splits.valid.files has no valid.token.idx"),
    "no-sampled-digests": (_remove((*VALID, "sampled_sha256")), ": splits.valid.sampled_sha256 is missing"),
    "digest-not-hex": (_set((*VALID, "sha256", "valid.idx"), "x" * 64),
                       ": splits.valid.sha256.valid.idx is a string ('xxxx"),
    "resource-outside": (_set((*VALID, "resources", "../dict.txt"), "0" * 64),
                         ": splits.valid.resources names '../dict.txt', not a file inside the directory"),
    "resources-a-list": (_set((*VALID, "resources"), []), ": splits.valid.resources is a list, not an object"),
}


@pytest.mark.parametrize("change, says", BAD_MANIFESTS.values(), ids=BAD_MANIFESTS.keys())
def test_a_manifest_of_the_wrong_shape_is_refused_in_one_line(dest, change, says):
    from segatron_preprocess.split_error import SplitFileError

    _edit_metadata(dest, change)
    with pytest.raises(SplitFileError) as refusal:
        _open(dest / "valid")
    message = str(refusal.value)
    assert message.startswith(f"{dest / 'segatron_preprocess.json'}{says}") and "\n" not in message, message


@pytest.mark.parametrize("content, says", [("[1, 2]", "holds a list, not a JSON object"), ("{", "not JSON")])
def test_metadata_that_is_not_a_json_object_is_refused(dest, content, says):
    from segatron_preprocess.split_error import SplitFileError

    (dest / "segatron_preprocess.json").write_text(content)
    with pytest.raises(SplitFileError, match=f"^{dest / 'segatron_preprocess.json'}: {says}"):
        _open(dest / "valid")


def test_a_split_without_metadata_is_refused(dest):
    (dest / "segatron_preprocess.json").unlink()
    with pytest.raises(FileNotFoundError, match=rf"^{dest / 'segatron_preprocess.json'} not found: nothing says that "
                                                rf"the files of split {dest / 'valid'} were written"):
        _open(dest / "valid")


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0"])
def test_an_old_directory_opens_after_one_warning_and_cannot_be_verified(version, warned, caplog):
    from segatron_preprocess.split_error import SplitFileError

    directory = DATA / f"binarized-{version}"
    with caplog.at_level(logging.WARNING, logger="segatron_preprocess"):
        first = _open(directory / "valid")
        _open(directory / "valid")
    assert len(first) == 53
    warnings = [record.getMessage() for record in caplog.records]
    assert warnings == [f"{directory / 'segatron_preprocess.json'}: split valid was written by segatron-preprocess "
                        f"{version}, without digests: nothing ties it to its dictionary, and a split copied in from "
                        f"another run is not detected (only its file{' sizes are' if version == '0.2.0' else 's are'} "
                        f"checked); run segatron-preprocess again to add them"]
    with pytest.raises(SplitFileError, match=rf"^{directory / 'valid'}: cannot be verified: its manifest in .* holds "
                                             r"no digests \(written by segatron-preprocess 0.2.0 or earlier\)"):
        _open(directory / "valid", verify=True)


def test_sizes_of_a_0_2_0_split_are_still_checked(tmp_path, warned):
    from segatron_preprocess.split_error import SplitFileError

    shutil.copytree(DATA / "binarized-0.2.0", tmp_path / "bin")
    _edit_metadata(tmp_path / "bin", _set((*VALID, "files", "valid.sentence.bin"), 1446))
    with pytest.raises(SplitFileError, match=r"valid\.sentence\.bin has 1,444 bytes, its manifest in "
                                             r"segatron_preprocess.json says 1,446"):
        _open(tmp_path / "bin" / "valid")
