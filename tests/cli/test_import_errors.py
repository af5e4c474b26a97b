"""segatron-import: each user mistake is one line naming the file or option, a non-zero exit, no traceback and no
output directory."""
import json

import pytest
import torch
from cli_errors import assert_user_error, listing
from conftest import run_cli

FULL_CONFIG = {"n_token": 3, "n_layer": 1, "n_head": 2, "d_model": 8, "d_head": 4, "d_inner": 16, "dropout": 0.1,
               "dropatt": 0.0, "mem_len": 4, "clamp_len": -1, "tgt_len": 4, "div_val": 1, "cutoffs": []}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("import_errors")
    torch.save({"word_emb.emb_layers.0.weight": torch.zeros(3, 8)}, tmp / "state.pt")
    (tmp / "latin1.txt").write_bytes("caf\u00e9 5\nthe 3\n".encode("latin-1"))
    (tmp / "vocab.txt").write_text("<eos>\nthe\ncat\n")
    (tmp / "config.json").write_text(json.dumps(FULL_CONFIG))
    (tmp / "no_n_token.json").write_text(json.dumps({k: v for k, v in FULL_CONFIG.items() if k != "n_token"}))
    (tmp / "latin1.json").write_bytes('{"n_token": "caf\u00e9"}'.encode("latin-1"))
    (tmp / "list.json").write_text("[1, 2]")
    for name, config in (("hf_no_vocab_size", json.dumps({"model_type": "transfo-xl", "cutoffs": []})),
                         ("hf_latin1", '{"model_type": "transfo-xl\u00e9"}')):
        (tmp / name).mkdir()
        (tmp / name / "config.json").write_bytes(config.encode("latin-1"))
    for name in ("hf_xlnet_no_weights", "hf_xlnet_bad_spiece"):
        (tmp / name).mkdir()
        (tmp / name / "config.json").write_text(json.dumps({"model_type": "xlnet"}))
    torch.save({}, tmp / "hf_xlnet_bad_spiece" / "pytorch_model.bin")
    (tmp / "hf_xlnet_bad_spiece" / "spiece.model").write_bytes(b"not a sentencepiece model")
    return {"tmp": tmp, "missing": tmp / "missing"}


CASES = {  # name: (arguments, what the error names)
    "config without n_token": (["authors-segatron-xl", "--state", "{tmp}/state.pt", "--config",
                                "{tmp}/no_n_token.json", "--vocab", "{tmp}/vocab.txt"],
                               "{tmp}/no_n_token.json: no n_token"),
    "config not UTF-8": (["authors-segatron-xl", "--state", "{tmp}/state.pt", "--config", "{tmp}/latin1.json",
                          "--vocab", "{tmp}/vocab.txt"], "{tmp}/latin1.json: not valid UTF-8"),
    "config not an object": (["authors-segatron-xl", "--state", "{tmp}/state.pt", "--config", "{tmp}/list.json",
                              "--vocab", "{tmp}/vocab.txt"], "{tmp}/list.json"),
    "vocab not UTF-8": (["authors-segatron-xl", "--state", "{tmp}/state.pt", "--config", "{tmp}/config.json",
                         "--vocab", "{tmp}/latin1.txt"], "{tmp}/latin1.txt: not valid UTF-8"),
    "dict not UTF-8": (["authors-cross-thought", "--checkpoint", "{tmp}/state.pt", "--dict", "{tmp}/latin1.txt"],
                       "{tmp}/latin1.txt"),
    "dict missing": (["authors-cross-thought", "--checkpoint", "{tmp}/state.pt", "--dict", "{missing}"],
                     "{missing}"),
    "dict is a directory": (["authors-cross-thought", "--checkpoint", "{tmp}/state.pt", "--dict", "{tmp}"],
                            "{tmp}"),
    "hf config without vocab_size": (["hf-transformer-xl", "--model-dir", "{tmp}/hf_no_vocab_size"],
                                     "{tmp}/hf_no_vocab_size/config.json: no vocab_size"),
    "hf config not UTF-8": (["hf-transformer-xl", "--model-dir", "{tmp}/hf_latin1"],
                            "{tmp}/hf_latin1/config.json: not valid UTF-8"),
    "hf-xlnet without weights": (["hf-xlnet", "--model-dir", "{tmp}/hf_xlnet_no_weights"],
                                 "{tmp}/hf_xlnet_no_weights: no weights (model.safetensors or pytorch_model.bin)"),
    "hf-xlnet spiece.model not sentencepiece": (["hf-xlnet", "--model-dir", "{tmp}/hf_xlnet_bad_spiece"],
                                                "{tmp}/hf_xlnet_bad_spiece/spiece.model: not a sentencepiece model"),
    "hf-xlnet config of another model": (["hf-xlnet", "--model-dir", "{tmp}/hf_no_vocab_size"],
                                         "{tmp}/hf_no_vocab_size/config.json: model_type is 'transfo-xl', not "
                                         "'xlnet'"),
    "tgt-len 0": (["hf-transformer-xl", "--model-dir", "{tmp}/hf_no_vocab_size", "--tgt-len", "0"], "--tgt-len"),
    "tgt-len negative": (["hf-transformer-xl", "--model-dir", "{tmp}/hf_no_vocab_size", "--tgt-len", "-1"],
                         "--tgt-len"),
}


@pytest.mark.parametrize("case", CASES)
def test_import_refuses_and_writes_nothing(case, files, tmp_path):
    args, named = CASES[case]
    out = run_cli("segatron-import", *[arg.format(**files) for arg in args], "--out", tmp_path / "imported",
                  expect_ok=False)
    assert_user_error(out, "segatron-import", named.format(**files))
    assert listing(tmp_path) == {}
