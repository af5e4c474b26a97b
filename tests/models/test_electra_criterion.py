"""Criterion electra against a by-hand computation on a tiny model with seeded sampling; labels are "replaced and
different"; the replaced-token loss reaches the generator only through the shared embeddings; evaluation draws
depend on the seed and the example alone."""
import math
import re
import types

import pytest
import torch
import torch.nn.functional as F
from test_segabert_electra import _build, _dictionary

PAD = 1


class _Task:
    def __init__(self, dictionary, seed=1):
        self.target_dictionary = self.source_dictionary = dictionary
        self.cfg = types.SimpleNamespace(seed=seed, leave_unmasked_prob=0.15, random_token_prob=0.0)


def _sample(arch):
    """Two rows (the second padded), three masked positions, with the indexes a segabert_mlm sample has."""
    src = torch.tensor([[0, 10, 39, 12, 39, 14, 2], [0, 20, 21, 39, 2, PAD, PAD]])  # 39: <mask>
    target = torch.full_like(src, PAD)
    target[0, 2], target[0, 4], target[1, 3] = 11, 13, 22
    zeros = torch.zeros_like(src)
    net_input = {"src_tokens": src, "src_lengths": src.ne(PAD).sum(1), "paragraph_index": zeros,
                 "sentence_index": zeros, "token_index": torch.arange(7).expand(2, 7).clone()}
    return {"id": torch.tensor([0, 1]), "net_input": net_input, "target": target}


def _model_and_criterion(arch, rtd_weight=50.0, seed=1):
    """A training-mode model without dropout (the by-hand pass sees the same model) and its criterion."""
    from segatron_fairseq.criterions.electra import ElectraCriterion

    torch.manual_seed(0)
    model = _build(arch, _dictionary(40), "--dropout", 0, "--attention-dropout", 0, "--activation-dropout", 0)
    return model.train(), ElectraCriterion(_Task(model.encoder.dictionary, seed), rtd_weight)


@pytest.mark.parametrize("arch", ["segabert_electra_tiny", "segabert_bert_electra_tiny"])
def test_loss_is_mlm_plus_lambda_rtd_by_hand(arch):
    """In training the replacements are Gumbel-max draws from torch's generator (which fairseq seeds each update)."""
    model, criterion = _model_and_criterion(arch, rtd_weight=7.0)
    sample = _sample(arch)
    torch.manual_seed(5)
    loss, sample_size, log = criterion(model, sample)

    net_input, target = sample["net_input"], sample["target"]
    src = net_input["src_tokens"]
    indexes = {k: v for k, v in net_input.items() if k.endswith("_index")}
    masked = target.ne(PAD)
    torch.manual_seed(5)
    logits, _ = model.generator(src, masked_tokens=masked, **indexes)
    mlm = F.cross_entropy(logits, target[masked])  # mean over the 3 masked positions
    noise = -torch.log(-torch.log(torch.rand(logits.shape).clamp(min=1e-20)))
    scores = logits.detach() + noise
    scores[:, PAD] = -math.inf
    corrupted = src.clone()
    corrupted[masked] = scores.argmax(-1)
    originals = torch.where(masked, target, src)
    labels = corrupted.ne(originals).float()
    features, _ = model.encoder(corrupted, features_only=True, **indexes)
    head = model.encoder.rtd_head
    rtd_logits = (F.gelu(features @ head.dense.weight.T + head.dense.bias) @ head.dense_prediction.weight.T
                  + head.dense_prediction.bias).squeeze(-1)
    real = src.ne(PAD)  # 12 tokens, [CLS] and [SEP] included
    rtd = F.binary_cross_entropy_with_logits(rtd_logits[real], labels[real])
    torch.testing.assert_close(loss, mlm + 7.0 * rtd)
    assert sample_size == 1 and log["masked"] == 3 and log["ntokens"] == 12
    assert int(log["replaced"]) == int(labels.sum())
    assert int(log["rtd_correct"]) == int(((rtd_logits[real] > 0).float() == labels[real]).sum())


def test_a_sample_equal_to_the_original_is_labelled_not_replaced(monkeypatch):
    """A generator certain of the original at two masked positions and of another token at the third: only the
    third is labelled replaced; the two kept ones are 0 though they were masked."""
    model, criterion = _model_and_criterion("segabert_bert_electra_tiny")
    sample = _sample("segabert_bert_electra_tiny")
    certain = torch.full((3, 40), -1e4)
    certain[0, 11], certain[1, 13], certain[2, 30] = 1e4, 1e4, 1e4  # originals 11, 13; 30 instead of 22
    seen = {}
    monkeypatch.setattr(model, "generate", lambda src, masked, **indexes: certain.requires_grad_())
    discriminate = model.discriminate

    def spy(src_tokens, **indexes):
        seen["input"] = src_tokens
        return discriminate(src_tokens, **indexes)

    monkeypatch.setattr(model, "discriminate", spy)
    _, _, log = criterion(model, sample)
    assert seen["input"][0].tolist() == [0, 10, 11, 12, 13, 14, 2] and seen["input"][1, 3] == 30
    assert int(log["replaced"]) == 1


def test_rtd_loss_reaches_the_generator_only_through_the_shared_embeddings():
    """The generator's own parameters (layers, projection, head) get the MLM gradient alone; the discriminator's own
    get only the RTD one; the shared word table gets both."""
    model, criterion = _model_and_criterion("segabert_electra_tiny")
    sample = _sample("segabert_electra_tiny")
    torch.manual_seed(5)
    loss, _, _ = criterion(model, sample)
    net_input, target = sample["net_input"], sample["target"]
    indexes = {k: v for k, v in net_input.items() if k.endswith("_index")}
    masked = target.ne(PAD)
    mlm = F.cross_entropy(model.generate(net_input["src_tokens"], masked, **indexes), target[masked])

    shared = {id(p) for p in model.encoder.parameters()}
    generator_own = [p for p in model.generator.parameters() if id(p) not in shared and p.requires_grad]
    discriminator_own = [p for name, p in model.encoder.named_parameters()
                         if name.startswith(("sentence_encoder.layers.0.self_attn", "rtd_head"))]
    word_table = model.encoder.sentence_encoder.embed_tokens.weight
    full = torch.autograd.grad(loss, generator_own + discriminator_own + [word_table], allow_unused=True)
    alone = torch.autograd.grad(mlm, generator_own + discriminator_own + [word_table], allow_unused=True)
    n = len(generator_own)
    for with_rtd, mlm_only in zip(full[:n], alone[:n]):
        if mlm_only is None:  # the BetterTransformer copies fairseq registers, unused
            assert with_rtd is None
        else:
            torch.testing.assert_close(with_rtd, mlm_only)
    assert all(g is None for g in alone[n:-1]) and all(g is not None and g.abs().sum() > 0 for g in full[n:-1])
    assert not torch.allclose(full[-1], alone[-1])  # the word table: MLM and RTD


def test_a_negative_rtd_weight_is_refused():
    from segatron_fairseq.criterions.electra import ElectraCriterion

    with pytest.raises(ValueError, match=re.escape("--rtd-weight -1.0: must be at least 0")):
        ElectraCriterion(_Task(_dictionary(40)), -1.0)


def test_electra_and_the_masked_lm_criteria_refuse_each_others_model():
    """--criterion electra on a SegaBERT model, and the masked-LM criteria (which ask the model for masked_tokens'
    logits) on an ELECTRA model, end with a ValueError naming the options, not an AttributeError or a shape error."""
    from fairseq.criterions.masked_lm import MaskedLmConfig, MaskedLmLoss

    from segatron_fairseq.criterions.electra import ElectraCriterion

    electra = _build("segabert_electra_tiny", _dictionary(40))
    segabert = _build("segabert_electra_tiny", _dictionary(40))
    segabert.generator = None  # as a model built for fine-tuning
    with pytest.raises(ValueError, match="--criterion electra needs a pre-training segabert_electra model"):
        ElectraCriterion(_Task(_dictionary(40)))(segabert, _sample("segabert_electra_tiny"))
    with pytest.raises(ValueError, match="segabert_electra model has no masked-LM head: pre-train it with --criterion "
                                         "electra"):
        MaskedLmLoss(MaskedLmConfig(tpu=False), _Task(_dictionary(40)))(electra, _sample("segabert_electra_tiny"))


def test_other_masking_than_electras_is_warned_about(caplog):
    """ELECTRA masks 85% <mask> / 15% kept / none random; the task's BERT defaults (80/10/10) are named."""
    from types import SimpleNamespace

    from segatron_fairseq.criterions.electra import ElectraCriterion

    task = _Task(_dictionary(40))
    for kept, randomised, warned in ((0.15, 0.0, False), (0.1, 0.1, True)):
        task.cfg = SimpleNamespace(leave_unmasked_prob=kept, random_token_prob=randomised)
        caplog.clear()
        ElectraCriterion(task)
        assert ("ELECTRA masks 85% <mask>" in caplog.text) == warned


def _corrupted_in_evaluation(model, criterion, sample):
    seen = {}
    discriminate = model.discriminate

    def spy(src_tokens, **indexes):
        seen["input"] = src_tokens
        return discriminate(src_tokens, **indexes)

    model.discriminate = spy
    loss, _, _ = criterion(model.eval(), sample)
    model.discriminate = discriminate
    return loss, seen["input"]


def _row(sample, row):
    return {"id": sample["id"][row:row + 1], "target": sample["target"][row:row + 1],
            "net_input": {key: value[row:row + 1] for key, value in sample["net_input"].items()}}


def test_evaluation_draws_do_not_depend_on_torchs_generator_or_the_batch():
    """fairseq-validate in two processes (torch's generator seeded differently) reports the same loss; each example
    gets the same replacements alone as in its batch, and other ones under another --seed or another id."""
    model, criterion = _model_and_criterion("segabert_electra_tiny")
    model.generate = lambda src, masked, **indexes: torch.zeros(int(masked.sum()), 40)  # uniform: every draw counts
    sample = _sample("segabert_electra_tiny")
    torch.manual_seed(1)
    first_loss, first = _corrupted_in_evaluation(model, criterion, sample)
    torch.manual_seed(2)
    second_loss, second = _corrupted_in_evaluation(model, criterion, sample)
    assert torch.equal(first, second) and torch.equal(first_loss, second_loss)
    for row in range(2):
        assert torch.equal(_corrupted_in_evaluation(model, criterion, _row(sample, row))[1][0], first[row])

    _, other_seed = _corrupted_in_evaluation(model, _model_and_criterion("segabert_electra_tiny", seed=2)[1], sample)
    renumbered = {**sample, "id": torch.tensor([5, 6])}
    _, other_ids = _corrupted_in_evaluation(model, criterion, renumbered)
    masked = sample["target"].ne(PAD)
    assert not torch.equal(other_seed[masked], first[masked]) and not torch.equal(other_ids[masked], first[masked])
