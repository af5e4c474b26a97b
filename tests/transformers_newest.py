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


_RUN_SEGMENTS = """
import sys, torch, transformers
directory, inputs_path, out_path = sys.argv[1:]
model = transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True).eval()
memory, logits = None, []
with torch.no_grad():
    for segment in torch.load(inputs_path):
        result = model(**segment, past_key_values=memory)
        memory = result.past_key_values
        logits.append(result.logits)
torch.save({"version": transformers.__version__, "logits": logits}, out_path)
"""


def newest_causal_lm_segments(tmp_path, directory, segments: list) -> list:
    """The logits of ``AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)`` in the newest
    release over ``segments`` (a list of input dicts) read one after the other, each after the memory
    (``past_key_values``) the one before returned."""
    assert NEWEST_PYTHON.exists(), f"{NEWEST_PYTHON} is missing: run scripts/install.sh"
    inputs_path, out_path = tmp_path / "newest_segments.pt", tmp_path / "newest_logits.pt"
    torch.save(segments, inputs_path)
    proc = subprocess.run([str(NEWEST_PYTHON), "-c", _RUN_SEGMENTS, str(directory), str(inputs_path), str(out_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = torch.load(out_path)
    assert int(result["version"].split(".")[0]) >= 5, result["version"]
    return result["logits"]
