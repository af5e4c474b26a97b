"""segatron-fairseq plugin: ``--user-dir segatron_fairseq`` imports this package.

Importing it registers the plugin's tasks, models, architectures,
criterions and optimizers with fairseq's registries.
"""
import os

PLUGIN_DIR = os.path.dirname(os.path.abspath(__file__))  # what --user-dir and common.user_dir take

from . import criterions, models, optim, tasks  # noqa: E402,F401
