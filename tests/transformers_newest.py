"""The newest transformers release, which exports must also load with equal outputs. It needs a
huggingface-hub that transformers 4.35.2 refuses, so scripts/install.sh installs it in a second environment,
``.venv/transformers-newest`` (same torch); the functions here run a model there on given inputs."""
import subprocess

import torch
from conftest import ROOT

NEWEST_PYTHON = ROOT / ".venv" / "transformers-newest" / "bin" / "python"


def _run_newest(script: str, tmp_path, inputs, *arguments: str):
    """Run ``script`` in the newest release with argv ``arguments..., the inputs file, the output file``;
    returns what it saved, after checking it ran a 5.x release."""
    assert NEWEST_PYTHON.exists(), f"{NEWEST_PYTHON} is missing: run scripts/install.sh"
    inputs_path, out_path = tmp_path / "newest_inputs.pt", tmp_path / "newest_outputs.pt"
    torch.save(inputs, inputs_path)
    proc = subprocess.run([str(NEWEST_PYTHON), "-c", script, *arguments, str(inputs_path), str(out_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = torch.load(out_path)
    assert int(result["version"].split(".")[0]) >= 5, result["version"]
    return result


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
    return _run_newest(_RUN, tmp_path, inputs, str(directory), class_name, output,
                       "1" if trust_remote_code else "0")["output"]


_RUN_CAUSAL_LM = """
import sys, torch, transformers
inputs_path, out_path = sys.argv[1:]
results = {}
with torch.no_grad():
    for directory, run in torch.load(inputs_path).items():
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True).eval()
        memory, logits = None, []
        for segment in run["segments"]:
            result = model(**segment, past_key_values=memory)
            memory = result.past_key_values
            logits.append(result.logits)
        results[directory] = {"logits": logits}
        if run.get("generate") is not None:
            prompt, max_new_tokens = run["generate"]
            out = model.generate(prompt, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=model.config.pad_token_id, output_scores=True,
                                 return_dict_in_generate=True)
            results[directory].update(sequences=out.sequences, scores=torch.stack(list(out.scores), dim=1))
torch.save({"version": transformers.__version__, "results": results}, out_path)
"""


def newest_causal_lm_runs(tmp_path, runs: dict) -> dict:
    """In the newest release, in one process, for each causal LM directory of ``runs`` (directory ->
    {"segments": a list of input dicts, "generate": (prompt (B, T), new tokens) or None}): the logits of
    ``AutoModelForCausalLM.from_pretrained(directory, trust_remote_code=True)`` over the segments read one after the
    other, each after the memory (``past_key_values``) the one before returned, and with "generate" the
    ``sequences`` (B, T + N) and ``scores`` (B, N, V) of greedy ``generate()``."""
    return _run_newest(_RUN_CAUSAL_LM, tmp_path, {str(directory): run for directory, run in runs.items()})["results"]


_RUN_PIPELINE = """
import sys, torch, transformers
directory, task, inputs_path, out_path = sys.argv[1:]
run = torch.load(inputs_path)
tokenizer = transformers.AutoTokenizer.from_pretrained(directory, trust_remote_code=True)
encoded = [dict(tokenizer(*text)) for text in run["tokenizer"]]
pipe = transformers.pipeline(task, model=directory, tokenizer=tokenizer, trust_remote_code=True)
torch.save({"version": transformers.__version__, "tokenizer": encoded,
            "pipeline": pipe(run["pipeline"], **run["options"])}, out_path)
"""


def newest_tokenizer_and_pipeline(tmp_path, directory, task: str, texts: list, pipeline_input, **options) -> dict:
    """In the newest release: ``tokenizer`` (the directory's AutoTokenizer, remote code: a dict per text of
    ``texts``, each a tuple of tokenizer arguments) and ``pipeline`` (``pipeline(task, model=directory)``
    applied to ``pipeline_input`` with ``options``)."""
    run = {"tokenizer": texts, "pipeline": pipeline_input, "options": options}
    return _run_newest(_RUN_PIPELINE, tmp_path, run, str(directory), task)
