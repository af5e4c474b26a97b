"""``fairseq-train --user-dir segatron_fairseq`` imports the plugin: it must not pull in the heavy libraries
that only some tools use (scipy and scikit-learn for GLUE metrics, matplotlib for plots, transformers for
the exported remote code, pytorch-crf and seqeval for token labelling)."""
import subprocess
import sys

import pytest

HEAVY = ("scipy", "sklearn", "matplotlib", "transformers", "torchcrf", "seqeval")


@pytest.mark.end_to_end
def test_importing_the_plugin_loads_no_heavy_library():
    code = ("import sys, segatron_fairseq, segatron_fairseq.cli.components; "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing segatron_fairseq loaded {out.strip()}"
