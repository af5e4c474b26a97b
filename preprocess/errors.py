"""The one error type the binarizer reports to users (no traceback)."""


class PreprocessError(Exception):
    """Bad input or a refused run; the message names the file and the problem."""
