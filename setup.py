"""segatron-fairseq: segment-aware Transformers as a fairseq plugin.

Install with ``bash scripts/install.sh``: fairseq 0.12.2 needs a patched source
build on Python 3.11 (see docs/installation.md), so this package is installed with
``--no-deps`` on top of it.
"""
from setuptools import find_packages, setup

setup(
    name="segatron-fairseq",
    version="0.3.0",
    description="Segatron-XL, SegaBERT and Cross-Thought as a fairseq --user-dir plugin",
    python_requires=">=3.10",
    # the binarizer lives in preprocess/ and is installed as segatron_preprocess
    packages=find_packages(include=["segatron_fairseq", "segatron_fairseq.*"]) + ["segatron_preprocess"],
    package_dir={"segatron_preprocess": "preprocess"},
    package_data={"segatron_fairseq": ["config/*.yaml", "config/*/*.yaml"]},
    install_requires=[
        "fairseq==0.12.2",
        "torch>=2.0",
        "hydra-core>=1.3.2",
        "omegaconf>=2.3.0",
        "numpy",
        "nltk",
        "sentencepiece",
        "scikit-learn",
        "scipy",
        "tensorboardX",
        "matplotlib",
        "tokenizers",
        "safetensors",
    ],
    entry_points={
        "console_scripts": [
            "segatron-preprocess = segatron_preprocess.cli:cli_main",
            "segatron-inspect = segatron_preprocess.inspect_item:cli_main",
            "segatron-split-wikitext = segatron_preprocess.split_wikitext:cli_main",
            "segatron-components = segatron_fairseq.cli.components:cli_main",
            "segatron-compare-lm = segatron_fairseq.cli.compare_lm:cli_main",
            "segatron-compare-mlm = segatron_fairseq.cli.compare_mlm:cli_main",
            "segatron-loss-by-boundary = segatron_fairseq.cli.loss_by_boundary:cli_main",
            "segatron-plot = segatron_fairseq.cli.plot:cli_main",
            "cross-thought-rank = segatron_fairseq.cli.cross_thought_rank:cli_main",
            "segatron-import = segatron_fairseq.cli.segatron_import:cli_main",
            "segatron-export = segatron_fairseq.cli.segatron_export:cli_main",
            "segatron-predict = segatron_fairseq.cli.segatron_predict:cli_main",
            "segatron-sts = segatron_fairseq.cli.sts:cli_main",
        ],
    },
)
