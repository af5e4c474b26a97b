"""What the binarizer's forkserver imports (``jobs.pool_context`` names this
module in ``set_forkserver_preload``). The forkserver alone imports it: the
run's own process never does.

Importing it ties the forkserver to the run's process, which started it: the
kernel SIGKILLs the forkserver when the run's process ends (Linux
``PR_SET_PDEATHSIG``), and the workers it forked, which set the same for
themselves (``staging.worker_process_setup``), go with it. Then it imports
every module a worker runs (fairseq, torch, NLTK's Punkt, the sub-word
tokenizers, the binarizer), once, so that each worker it forks starts with
them loaded.
"""
from .staging import die_with_parent

die_with_parent()

import nltk.tokenize.punkt  # noqa: E402,F401  (a worker unpickles the run's Punkt splitter)
import tokenizers  # noqa: E402,F401  (--bpe wordpiece)

from . import binarize, subwords  # noqa: E402,F401
