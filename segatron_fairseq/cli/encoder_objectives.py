"""The encoder pre-training objectives as ``fairseq-train`` options: what
``segatron-compare-mlm`` trains and ``scripts/benchmarks/bench_encoder_objectives.py``
times. Each objective runs on a SegaBERT encoder with the index tables
(``segabert``) and without them (``bert``, learned absolute positions), with
everything else equal.

An objective is its task options and criterion, its architecture pair, and
the held-out measure that compares its two models: the masked-LM perplexity
where the objective has an MLM head, scored by ``fairseq-validate`` on the
same masks; for ELECTRA the discriminator's ROC AUC (and accuracy) of
replaced-token detection on the same model-independent replacements
(``evaluation.replaced_token_detection``). ``options`` may hold
``{embed_dim}``: a quarter of the encoder's width (ALBERT's factorized E).
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass(frozen=True)
class Objective:
    name: str
    help: str
    training: List[str]  # task / criterion / architecture options besides the width
    archs: Dict[str, str]  # "segabert" / "bert" -> the tiny architecture of that model
    measure: str = "mlm_ppl"  # the held-out measure compared: a key of fairseq-validate's summary, or rtd_auc
    options: List[str] = field(default_factory=list)  # model options besides the width (e.g. sharing)
    # the same encoder trained by plain masked LM (the speed baseline): the same architectures unless the
    # objective's model is more than an encoder
    mlm_archs: Optional[Dict[str, str]] = None

    def __post_init__(self):
        if self.mlm_archs is None:
            object.__setattr__(self, "mlm_archs", self.archs)


MLM = Objective("mlm", "BERT's masked LM (15%, 80/10/10 per token)",
                ["--task", "segabert_mlm", "--criterion", "masked_lm"],
                {"segabert": "segabert_tiny", "bert": "segabert_bert_tiny"}, measure="ppl")

SPAN = Objective("span", "SpanBERT: geometric whole-word spans masked, 80/10/10 per span, plus the span boundary "
                 "objective (the measure: its masked-LM part alone)",
                 ["--task", "segabert_mlm", "--mask-span", "span", "--span-boundary-objective",
                  "--criterion", "span_boundary_mlm"],
                 MLM.archs)
SENTENCE_SPAN = Objective("sentence_span", "ours: whole sentences masked, plus the span boundary objective",
                          ["--task", "segabert_mlm", "--mask-span", "sentence", "--span-boundary-objective",
                           "--criterion", "span_boundary_mlm"],
                          MLM.archs)

ALBERT = Objective("albert", "ALBERT: factorized embedding (E = width / 4), all layers shared, masked LM plus "
                   "sentence-order prediction (the measure: the masked-LM part alone)",
                   ["--task", "segabert_mlm", "--sentence-order-prediction", "--criterion", "masked_lm_sop"],
                   MLM.archs, options=["--share-encoder-layers", "all", "--factorized-embed-dim",
                                                      "{embed_dim}"])
ELECTRA = Objective("electra", "ELECTRA: embedding E = width / 4, a generator of a quarter of the width, "
                    "replaced token detection (x50) plus the generator's masked LM (the measure: held-out "
                    "detection AUC on unigram replacements)",
                    ["--task", "segabert_mlm", "--criterion", "electra", "--leave-unmasked-prob", "0.15",
                     "--random-token-prob", "0"],
                    {"segabert": "segabert_electra_tiny", "bert": "electra_tiny"}, measure="rtd_auc",
                    options=["--factorized-embed-dim", "{embed_dim}", "--generator-width-fraction", "0.25"],
                    mlm_archs=MLM.archs)

OBJECTIVES: Dict[str, Objective] = {objective.name: objective
                                    for objective in (MLM, SPAN, SENTENCE_SPAN, ALBERT, ELECTRA)}


def model_options(objective: Objective, dim: int) -> List[str]:
    """``objective.options`` for an encoder of width ``dim``."""
    return [option.format(embed_dim=max(dim // 4, 1)) for option in objective.options]
