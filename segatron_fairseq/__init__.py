"""segatron-fairseq plugin: ``--user-dir segatron_fairseq`` imports this package.

Importing it registers the plugin's tasks, models, architectures and
criterions with fairseq's registries.
"""
from . import criterions, models, tasks  # noqa: F401
