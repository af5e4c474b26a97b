"""Every model family's held-out figures are the same on every run with the same ``--seed``: fairseq-validate
(fairseq-eval-lm for Segatron-XL) run twice on a session fixture's checkpoint, torch's global generator seeded
differently before each run, as two processes start it."""
import re

import pytest
import torch
from conftest import PLUGIN_DIR, run_cli

# family: (the fixture, the checkpoint and data below or from it, the command's task)
FAMILIES = {
    "segatron_xl": ("segatron_xl_trained", "segatron_lm"),
    "segabert": ("segabert_checkpoint", "segabert_mlm"),
    "albert_sop": ("albert_checkpoint", "segabert_mlm"),
    "electra": ("electra_checkpoints", "segabert_mlm"),
    "xlnet": ("xlnet_checkpoints", "xlnet_plm"),
    "cloze": ("cloze_trained", "cloze_lm"),
    "cross_thought": ("cross_thought_trained", "cross_thought_mlm"),
}
FIGURES = re.compile(r"(valid on 'valid' subset .*|Loss \(base 2\): .*)")


def _checkpoint_and_data(request, fixture):
    found = request.getfixturevalue(fixture)
    if isinstance(found, dict):  # several pre-trained checkpoints of the kind: the first
        found = next(iter(found.values()))
    if found.suffix == ".pt":
        return found, request.getfixturevalue("segabert_corpus")
    return found / "ckpt" / "checkpoint_last.pt", found / "bin"


@pytest.mark.end_to_end
@pytest.mark.parametrize("family", FAMILIES)
def test_evaluation_gives_the_same_figures_on_every_run(request, family):
    fixture, task = FAMILIES[family]
    checkpoint, data = _checkpoint_and_data(request, fixture)
    if family == "segatron_xl":
        command = ["fairseq-eval-lm", data, "--gen-subset", "valid", "--tgt-len", 16]
    else:
        command = ["fairseq-validate", data, "--valid-subset", "valid"]
    figures = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        out = run_cli(*command, "--user-dir", PLUGIN_DIR, "--task", task, "--path", checkpoint, "--batch-size", 4,
                      "--cpu", "--seed", 3)
        figures.append([line.split(" | ")[1:] if " | " in line else line for line in FIGURES.findall(out)])
    assert figures[0] and figures[0] == figures[1], figures
