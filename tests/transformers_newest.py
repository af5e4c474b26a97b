"""The newest transformers release, which exports must also load with equal outputs. It needs a
huggingface-hub that transformers 4.35.2 refuses, so scripts/install.sh installs it in a second environment,
``.venv/transformers-newest`` (same torch); ``newest_outputs`` runs a model there on given inputs."""
import subprocess

import torch
from conftest import ROOT

NEWEST_PYTHON = ROOT / ".venv" / "transformers-newest" / "bin" / "python"

_RUN = """
import sys, torch, transformers
directory, class_name, output, remote, inputs_path, out_path = sys.argv[1:]
model = getattr(transformers, class_name).from_pretrained(directory, trust_remote_code=remote == "1").eval()
with torch.no_grad():
    result = model(**torch.load(inputs_path))
torch.save({"version": transformers.__version__, "output": getattr(result, output)}, out_path)
"""


def newest_outputs(tmp_path, directory, class_name: str, inputs: dict, output: str = "logits",
                   trust_remote_code: bool = False) -> torch.Tensor:
    """``transformers.<class_name>.from_pretrained(directory)(**inputs).<output>`` in the newest release."""
    assert NEWEST_PYTHON.exists(), f"{NEWEST_PYTHON} is missing: run scripts/install.sh"
    inputs_path, out_path = tmp_path / "newest_inputs.pt", tmp_path / "newest_outputs.pt"
    torch.save(inputs, inputs_path)
    proc = subprocess.run([str(NEWEST_PYTHON), "-c", _RUN, str(directory), class_name, output,
                           "1" if trust_remote_code else "0", str(inputs_path), str(out_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = torch.load(out_path)
    assert int(result["version"].split(".")[0]) >= 5, result["version"]
    return result["output"]
