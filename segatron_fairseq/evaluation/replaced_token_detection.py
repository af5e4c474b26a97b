"""ELECTRA's held-out measure that two models can share: replaced token
detection on corrupted inputs that do not depend on the model.

A model's own generator samples its own replacements, so two models (with and
without index tables) would be scored on different inputs. Here the masked
positions are the task's seeded masking of the split (``segabert_mlm``: the
same for every model trained on the corpus with the same task settings), and
each masked position takes a token drawn from the corpus unigram (dict.txt's
counts, special symbols and ``<mask>`` left out) by a generator seeded with
(seed, the example's index): the same tokens for every model. A token is
labelled replaced where its drawn token differs from the original
(ELECTRA's labels). Scores cover every non-pad token ([CLS] and [SEP]
included): the discriminator's accuracy (logit > 0) and ROC AUC
(scikit-learn), and the generator's masked-LM perplexity on the task's masked
input (when the model has its generator)::

    from segatron_fairseq.hub.checkpoints import load_checkpoint
    loaded = load_checkpoint("ckpt/checkpoint_best.pt", "segabert", "data-bin/corpus")
    scores = score_split(loaded.model, loaded.task, "valid", seed=1)
    scores.accuracy, scores.auc, scores.generator_ppl
"""
import math
from dataclasses import dataclass
from typing import Dict, Iterator, Tuple

import numpy as np
import torch

from segatron_fairseq.segments import MASK_SYMBOL

REPLACEMENT_STREAM = 0xE1EC7A  # keeps the replacement draws apart from any other use of the seed


@dataclass
class DetectionScores:
    """Replaced token detection on a split: the discriminator's accuracy and
    ROC AUC over ``tokens`` non-pad tokens, of which ``replaced`` are labelled
    replaced; the generator's perplexity over its ``masked`` positions (nan
    without a generator)."""

    accuracy: float
    auc: float
    generator_ppl: float
    tokens: int
    replaced: int
    masked: int


def unigram_distribution(dictionary) -> np.ndarray:
    """(len(dictionary),) probabilities proportional to dict.txt's counts;
    fairseq's special symbols and ``<mask>`` get none."""
    counts = np.asarray(dictionary.count, dtype=np.float64)
    counts[:dictionary.nspecial] = 0.0
    if MASK_SYMBOL in dictionary.indices:
        counts[dictionary.index(MASK_SYMBOL)] = 0.0
    if counts.sum() <= 0:
        raise ValueError("the dictionary has no counts to draw replacements from")
    return counts / counts.sum()


def replacement_tokens(example_id: int, count: int, distribution: np.ndarray, seed: int) -> np.ndarray:
    """``count`` tokens drawn from ``distribution`` for example ``example_id``:
    the same for the same (seed, example_id), whatever the model."""
    rng = np.random.default_rng([seed, REPLACEMENT_STREAM, int(example_id)])
    return rng.choice(len(distribution), size=count, p=distribution)


def corrupted_batches(task, split: str, seed: int, batch_size: int = 16) -> Iterator[Tuple[Dict, torch.Tensor,
                                                                                           torch.Tensor]]:
    """The split of ``task`` (a ``segabert_mlm``: its masking and examples
    seeded with ``seed``) in batches of (net_input with the corrupted
    ``src_tokens``, (B, T) labels 1 where a drawn token differs from the
    original, the masked-LM sample's net_input with ``target``), all
    independent of any model."""
    task.cfg.seed = seed
    task.load_dataset(split)
    dataset = task.dataset(split)
    dataset.set_epoch(1)
    distribution = unigram_distribution(task.source_dictionary)
    pad = task.source_dictionary.pad()
    order = np.sort(dataset.ordered_indices())
    for start in range(0, len(order), batch_size):
        sample = dataset.collater([dataset[int(i)] for i in order[start:start + batch_size]])
        src_tokens, target = sample["net_input"]["src_tokens"], sample["target"]
        masked = target.ne(pad)
        originals = torch.where(masked, target, src_tokens)
        corrupted = originals.clone()
        for row, example_id in enumerate(sample["id"].tolist()):
            positions = masked[row].nonzero().squeeze(-1)
            drawn = replacement_tokens(example_id, len(positions), distribution, seed)
            corrupted[row, positions] = torch.from_numpy(drawn).to(corrupted)
        yield {**sample["net_input"], "src_tokens": corrupted}, corrupted.ne(originals).long(), sample


def detection_metrics(labels: np.ndarray, scores: np.ndarray) -> Tuple[float, float]:
    """(accuracy of ``scores`` > 0, ROC AUC) against 0/1 ``labels`` (nan
    when only one class is present)."""
    from sklearn.metrics import roc_auc_score

    labels, scores = np.asarray(labels), np.asarray(scores, dtype=np.float64)
    accuracy = float(((scores > 0) == (labels == 1)).mean()) if len(labels) else math.nan
    auc = float(roc_auc_score(labels, scores)) if len(set(labels.tolist())) == 2 else math.nan
    return accuracy, auc


@torch.no_grad()
def score_split(model, task, split: str = "valid", seed: int = 1, batch_size: int = 16) -> DetectionScores:
    """``model`` (a ``segabert_electra`` built for pre-training: its
    ``discriminate`` and ``generate``) on ``split`` of ``task`` (see the
    module doc); ``seed`` sets the masking and the replacements."""
    model.eval()
    device = next(model.parameters()).device
    pad = task.source_dictionary.pad()
    all_labels, all_scores = [], []
    nll, masked_total = 0.0, 0
    has_generator = model.has_generator()
    for corrupted, labels, sample in corrupted_batches(task, split, seed, batch_size):
        corrupted = {k: v.to(device) for k, v in corrupted.items() if k != "src_lengths"}
        src_tokens = corrupted.pop("src_tokens")
        real = src_tokens.ne(pad)
        logits = model.discriminate(src_tokens, **corrupted).float()
        all_scores.append(logits[real].cpu().numpy())
        all_labels.append(labels.to(device)[real].cpu().numpy())
        if has_generator:
            original = sample["net_input"]["src_tokens"].to(device)
            target = sample["target"].to(device)
            masked = target.ne(pad)
            generated = model.generate(original, masked, **corrupted).float()
            nll += float(torch.nn.functional.cross_entropy(generated, target[masked], reduction="sum"))
            masked_total += int(masked.sum())
    labels, scores = np.concatenate(all_labels), np.concatenate(all_scores)
    accuracy, auc = detection_metrics(labels, scores)
    ppl = math.exp(nll / masked_total) if masked_total else math.nan
    return DetectionScores(accuracy, auc, ppl, int(len(labels)), int(labels.sum()), masked_total)
