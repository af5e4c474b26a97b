"""The sha256 digests of a split's manifest (``manifest.py``): of a whole
file, and of sampled blocks of it.

``sampled_sha256`` is what opening a split checks: SAMPLE_BLOCKS blocks of
SAMPLE_BLOCK_BYTES spread evenly over the file, first and last included (the
whole file when it is no longer than they are), so the cost of opening does not
grow with the split. A file copied from another run differs nearly everywhere
and is caught; one byte changed in a large file is caught by ``file_sha256``,
what ``--verify`` checks. Both numbers are part of the on-disk format: a
manifest's sampled digests were computed with them.
"""
import hashlib
import os

SAMPLE_BLOCKS = 16
SAMPLE_BLOCK_BYTES = 1 << 16
_READ_BYTES = 1 << 20


def file_sha256(path: str) -> str:
    """The hex sha256 of the file ``path``, read whole."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_READ_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def sample_offsets(size: int):
    """Where the sampled blocks of a file of ``size`` bytes start; ``[0]``
    (one block, the whole file) when the blocks would cover it."""
    if size <= SAMPLE_BLOCKS * SAMPLE_BLOCK_BYTES:
        return [0]
    last = size - SAMPLE_BLOCK_BYTES
    return [last * k // (SAMPLE_BLOCKS - 1) for k in range(SAMPLE_BLOCKS)]


def sampled_sha256(path: str) -> str:
    """The hex sha256 of the file's sampled blocks (``sample_offsets``), in order."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        offsets = sample_offsets(size)
        length = size if len(offsets) == 1 else SAMPLE_BLOCK_BYTES
        for offset in offsets:
            f.seek(offset)
            digest.update(f.read(length))
    return digest.hexdigest()
