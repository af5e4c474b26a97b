"""List what this plugin registered in fairseq's registries.

``segatron-components`` (or ``python -m segatron_fairseq.cli.components``)
prints every task, model, architecture and criterion whose implementation
lives in this package. Importing the package (as ``--user-dir`` does, and as
importing this module does) is what registers them.
"""
import argparse
from typing import Dict, List

from fairseq.criterions import CRITERION_REGISTRY
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY

from segatron_fairseq import PLUGIN_DIR
from segatron_fairseq.cli.user_errors import exit_on_user_error

PLUGIN_MODULE = __name__.split(".")[0]


def _from_plugin(obj) -> bool:
    return getattr(obj, "__module__", "").split(".")[0] == PLUGIN_MODULE


def plugin_components() -> Dict[str, List[str]]:
    """The names the plugin registered, per registry."""
    architectures = [
        f"{arch} ({ARCH_MODEL_REGISTRY[arch].__name__})"
        for arch, fn in ARCH_CONFIG_REGISTRY.items()
        if _from_plugin(fn) or _from_plugin(ARCH_MODEL_REGISTRY[arch])
    ]
    return {
        "tasks": sorted(n for n, c in TASK_REGISTRY.items() if _from_plugin(c)),
        "models": sorted(n for n, c in MODEL_REGISTRY.items() if _from_plugin(c)),
        "architectures": sorted(architectures),
        "criterions": sorted(n for n, c in CRITERION_REGISTRY.items() if _from_plugin(c)),
    }


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="segatron-components", description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    with exit_on_user_error(parser.prog):
        print(f"fairseq plugin {PLUGIN_MODULE} ({PLUGIN_DIR}) registers:")
        for kind, names in plugin_components().items():
            print(f"  {kind} ({len(names)}):")
            for name in names or ["(none)"]:
                print(f"    {name}")


if __name__ == "__main__":
    cli_main()
