"""The benchmark scripts added with the cloze model and XLNet run end to end at a tiny size and print each
variant's figures and the ratios against their baseline measured in the same run."""
import re
import subprocess
import sys

import pytest
from conftest import ROOT

TINY = ["--width", "32", "--heads", "2", "--batch-size", "1", "--seq-len", "24", "--steps", "1", "--warmup", "0",
        "--repeats", "1", "--threads", "1"]


def _run(script, *options):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmarks" / script), *TINY, *options],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


@pytest.mark.end_to_end
def test_bench_xlnet_reports_both_position_kinds_against_segatron_xl():
    out = _run("bench_xlnet.py", "--layers", "1", "--vocab", "200", "--mem-len", "12")
    assert "XLNet reuse 12, 4 targets" in out
    for model in ("segatron_xl", "xlnet_token", "xlnet_segatron"):
        assert re.search(rf"^{model} +[\d,]+ +[\d,]+ +[\d,]+ +[\d.]+x$", out, re.M), (model, out[-1500:])
    assert re.search(r"^segatron_xl .* 1\.000x$", out, re.M)


@pytest.mark.end_to_end
def test_bench_cloze_two_tower_reports_tokens_and_targets_against_segabert():
    out = _run("bench_cloze_two_tower.py", "--layers", "2")
    assert re.search(r"cloze_two_tower / segabert: throughput [\d.]+x \(tokens\), peak memory [\d.]+x", out)
    assert re.search(r"targets/s: segabert [\d,]+ \(15% of the tokens\), cloze_two_tower [\d,]+ \(every token\)", out)
