"""``SplitFileError``: a binarized split that is refused when it is opened."""
from fairseq.checkpoint_utils import CheckpointFileError


class SplitFileError(CheckpointFileError):
    """A split's files or manifest that are not what ``segatron-preprocess``
    wrote; the message is one line naming the file and the problem. A
    ``ValueError``, and a ``CheckpointFileError`` (the project's fairseq
    patch), whose refusal fairseq's tools print as that one line, without a
    traceback, as for a refused checkpoint."""
