"""Criterion ``siamese_nli`` (alias ``segabert_siamese``): cross-entropy of
the siamese head's labels for (u, v), each the pooled last layer of one
sentence read alone by the shared encoder (Sentence-BERT's classification
objective); reports accuracy."""
import torch.nn.functional as F
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from segatron_fairseq.criterions.example_metrics import log_loss_per_example, log_percent
from segatron_fairseq.evaluation.sentence_embeddings import pool
from segatron_fairseq.tasks.registry_aliases import register_alias


def sentence_embedding(model, net_input, mode: str, padding_idx: int):
    """(B, d) pooled last-layer states of a batch of single texts."""
    features, _ = model(**net_input, features_only=True)
    return pool(features, net_input["src_tokens"].eq(padding_idx), mode)


@register_criterion("siamese_nli", dataclass=FairseqDataclass)
class SiameseClassificationCriterion(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        self.head_name, self.pooling = task.cfg.classification_head_name, task.cfg.pooling

    def forward(self, model, sample, reduce=True):
        u = sentence_embedding(model, sample["net_input"], self.pooling, self.padding_idx)
        v = sentence_embedding(model, sample["net_input_b"], self.pooling, self.padding_idx)
        logits = model.task_head(self.head_name)(u, v).float()
        target = sample["target"]
        loss = F.cross_entropy(logits, target, reduction="sum")
        size = target.numel()
        return loss, size, {"loss": loss.data, "ntokens": sample["ntokens"], "nsentences": size, "sample_size": size,
                            "ncorrect": int(logits.argmax(dim=1).eq(target).sum())}

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        if log_loss_per_example(logging_outputs):
            log_percent("accuracy", logging_outputs, "ncorrect")

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


register_alias("criterion", "segabert_siamese", "siamese_nli")
