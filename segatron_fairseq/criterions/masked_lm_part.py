"""The masked-LM part of the objectives that add a second loss to it
(``span_boundary_mlm``, ``masked_lm_sop``): one encoder pass, the masked
tokens' summed cross-entropy, and its log as ``mlm_loss`` / ``mlm_ppl`` (per
masked token, base 2: what fairseq's ``masked_lm`` logs as ``loss`` / ``ppl``),
so the objectives' held-out measure has one name."""
import math
from typing import Dict, List, Tuple

import torch
from fairseq import metrics, modules, utils


def masked_lm_part(model, sample: Dict, padding_idx: int) -> Tuple[torch.Tensor, torch.Tensor, int]:
    """(features (B, T, H), the masked tokens' summed cross-entropy, the
    number M of masked tokens (targets other than ``padding_idx``))."""
    target = sample["target"]
    masked = target.ne(padding_idx)
    features, _ = model(**sample["net_input"], features_only=True)
    logits = model.masked_lm_logits(features, masked)
    loss = modules.cross_entropy(logits.view(-1, logits.size(-1)), target[masked], reduction="sum")
    return features, loss, int(masked.sum())


def log_masked_lm_part(logging_outputs: List[Dict]) -> None:
    """``loss`` (the criterion's, per masked token) and ``mlm_loss`` /
    ``mlm_ppl`` (the masked LM alone), base 2."""
    sample_size = max(sum(log.get("sample_size", 0) for log in logging_outputs), 1)
    for key in ("loss", "mlm_loss"):
        value = sum(log.get(key, 0) for log in logging_outputs)
        metrics.log_scalar(key, value / sample_size / math.log(2), sample_size, round=3)
    metrics.log_derived("mlm_ppl", lambda meters: utils.get_perplexity(meters["mlm_loss"].avg))
