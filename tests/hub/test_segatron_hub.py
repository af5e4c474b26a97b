"""Scoring raw text with a trained Segatron-XL: the same tokens and losses as fairseq-eval-lm on that text
binarized, and independent calls."""
import copy
import math
import re
import shutil

import numpy as np
import pytest
import torch
from conftest import PLUGIN_DIR, binarized_training_text, fairseq_train, run_cli


@pytest.fixture
def trained(segatron_xl_trained):
    return segatron_xl_trained


def test_score_equals_fairseq_eval_lm_on_the_binarized_text(trained, tmp_path):
    from segatron_fairseq.evaluation.token_losses import read_stream, token_losses
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    reference = tmp_path / "bin"
    shutil.copytree(trained / "bin", reference)  # its dictionary and Punkt model, for the new split
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--testpref", trained / "score.txt",
            "--destdir", reference)
    checkpoint = trained / "ckpt" / "checkpoint_last.pt"
    out = run_cli("fairseq-eval-lm", reference, "--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--path",
                  checkpoint, "--gen-subset", "test", "--batch-size", 1, "--tgt-len", 16, "--cpu")
    match = re.search(r"Evaluated ([\d,]+) tokens.*\n.*Loss \(base 2\): ([0-9.]+)", out)
    evaluated, loss_bits = int(match.group(1).replace(",", "")), float(match.group(2))

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    result = lm.score((trained / "score.txt").read_text())
    assert len(result["tokens"]) == evaluated
    assert abs(result["loss"] / math.log(2) - loss_bits) < 1e-3
    assert result["ppl"] == pytest.approx(math.exp(result["loss"]))
    tokens, sentence_starts, paragraph_starts = read_stream(str(reference / "test"))
    assert np.array_equal(result["tokens"].numpy(), tokens)
    expected = token_losses(str(checkpoint), tokens, sentence_starts, paragraph_starts, 16)
    np.testing.assert_allclose(-result["positional_scores"].numpy(), expected, rtol=0, atol=1e-5)


def test_calls_are_independent(trained):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    text = (trained / "score.txt").read_text()
    first = lm.score(text)["positional_scores"]
    lm.score((trained / "other.txt").read_text())
    again = lm.score(text)["positional_scores"]
    assert np.array_equal(first.numpy(), again.numpy())  # the other text's memory did not leak in


def _check_image(prefix, width, height):
    from matplotlib import image

    pixels = image.imread(f"{prefix}.png")
    assert pixels.shape[:2] == (height, width)
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 20  # not blank
    assert "<svg" in open(f"{prefix}.svg").read(2000)


def test_attention_weights_and_plot(trained, tmp_path):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    result = lm.attention((trained / "score.txt").read_text(), max_tokens=24)
    assert len(result["layers"]) == 2 and result["layers"][0].shape == (4, 24, 24)
    assert torch.allclose(result["layers"][0].sum(-1), torch.ones(4, 24))
    assert torch.all(result["layers"][0].triu(diagonal=1) == 0)  # causal, no memory
    assert result["symbols"][0] == "</s>" and result["paragraph_starts"][0]
    run_cli("segatron-plot", "attention", "--model-dir", trained / "ckpt", "--checkpoint-file", "checkpoint_last.pt",
            "--data", trained / "bin", "--text", trained / "score.txt", "--layer", 1, "--max-tokens", 24,
            "--out", tmp_path / "attention")
    _check_image(tmp_path / "attention", 1600, 400)  # 4 heads of 4 x 4 inches at 100 dpi


def test_curves_and_boundary_plots(trained, tmp_path):
    from segatron_fairseq.cli.plot import losses_by_sentence_position, read_curves

    curves = read_curves(str(trained / "train.log"))
    assert [u for u, _ in curves["train"]] == [5, 10, 15, 20, 25, 30] and [u for u, _ in curves["valid"]][:3] == \
        [10, 20, 30]
    run_cli("segatron-plot", "curves", trained / "train.log", trained / "train.log", "--labels", "a,b", "--out",
            tmp_path / "curves")
    _check_image(tmp_path / "curves", 800, 500)
    assert np.allclose(losses_by_sentence_position(np.array([1.0, 3.0, 2.0, 4.0]), np.array([0, 0, 1, 5]), 2),
                       [2.0, 2.0, 4.0])
    run_cli("segatron-plot", "boundary", trained / "ckpt" / "checkpoint_last.pt", "--data", trained / "bin",
            "--split", "valid", "--tgt-len", 16, "--out", tmp_path / "boundary")
    _check_image(tmp_path / "boundary", 800, 500)


def test_loss_by_boundary_groups_every_token_once(trained):
    """segatron-loss-by-boundary: the last, first and other tokens of sentences partition the split, and the
    perplexity over all of them is that of token_losses over the stream."""
    from segatron_fairseq.evaluation.token_losses import read_stream, token_losses

    checkpoint = trained / "ckpt" / "checkpoint_last.pt"
    out = run_cli("segatron-loss-by-boundary", checkpoint, "--data", trained / "bin", "--split", "valid",
                  "--tgt-len", 16)
    tokens, sentence_starts, paragraph_starts = read_stream(str(trained / "bin" / "valid"))
    lines = out.splitlines()  # the table follows the log of the checkpoints' loading
    table = next(number for number, line in enumerate(lines) if line.startswith("valid: "))
    header, _, counts, row = lines[table:table + 4]
    assert header == f"valid: {len(tokens):,} tokens; ppl by group (tokens)"
    last, first, other, total = (int(c.replace(",", "")) for c in counts.split())
    assert last + first + other == total == len(tokens) and min(last, first, other) > 0
    expected = math.exp(token_losses(str(checkpoint), tokens, sentence_starts, paragraph_starts, 16).mean())
    assert float(row.split()[-1]) == pytest.approx(expected, abs=0.01)


def test_generation_flags_follow_the_binarizer(trained):
    """Tokens pushed one at a time get the sentence / paragraph starts the binarizer gave them in whole
    paragraphs (the generated text's flags follow the training data's rules)."""
    from segatron_fairseq.evaluation.token_losses import read_stream
    from segatron_preprocess.text_encoder import TextEncoder

    tokens, sentence_starts, paragraph_starts = read_stream(str(trained / "bin" / "valid"))
    encoder = TextEncoder(str(trained / "bin"))
    indexer = encoder.generation_indexer()
    pushed = np.array([indexer.push(int(t)) for t in tokens])
    words = tokens != encoder.dictionary.eos()
    assert sentence_starts[words].sum() > 50
    assert np.array_equal(pushed[words, 0], sentence_starts[words])
    assert np.array_equal(pushed[words, 1], paragraph_starts[words])


def test_sampling_incremental_equals_recomputing_and_is_reproducible(trained):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    prompt = "The lobster lives on rocky ground . The larva"
    # the window (memory 32 + segment 16 = 48 positions) is not capped within 12 + 30 tokens: the same tokens
    greedy = lm.sample_tokens(prompt, max_len=30, topk=1)
    assert greedy == lm.sample_tokens(prompt, max_len=30, topk=1, incremental=False)
    # the first greedy token is the argmax of the model's own next-token logits after the prompt
    encoded = lm.encode(prompt)
    eos = lm.task.dictionary.eos()
    source = torch.tensor([[eos] + encoded.tokens[:-1].tolist()])
    flags = [np.concatenate([[True], f[:-1]]) for f in (encoded.sentence_starts, encoded.paragraph_starts)]
    lm.model.reset_memory()
    with torch.no_grad():
        logits, _ = lm.model(source, sentence_starts=torch.tensor(flags[0])[None],
                             paragraph_starts=torch.tensor(flags[1])[None])
    lm.model.reset_memory()
    excluded = [lm.task.dictionary.pad(), lm.task.dictionary.bos()]
    logits[0, -1, excluded] = float("-inf")
    assert greedy[0] == int(logits[0, -1].argmax())
    first = lm.sample(prompt, max_len=40, topk=5, temperature=0.8, seed=7)
    lm.score((trained / "other.txt").read_text())  # another call in between
    assert lm.sample(prompt, max_len=40, topk=5, temperature=0.8, seed=7) == first
    assert lm.sample(prompt, max_len=40, topp=0.9, seed=8) != first
    words = set(lm.task.dictionary.symbols)
    assert all(w in words for line in first.splitlines() for w in line.split())
    long = lm.sample_tokens(prompt, max_len=120, topk=3, seed=1)  # past the window: the cache is capped
    assert len(long) == 120


def _full_forward_log_probs(model, tokens, encoder):
    """Log-probabilities (N,) of ``tokens`` (N,) read after a leading </s> in one forward without memory, the
    tokens flagged by a fresh GenerationIndexer (the rule the generator applies)."""
    eos = encoder.dictionary.eos()
    indexer = encoder.generation_indexer()
    flags = [(True, True)] + [indexer.push(int(t)) for t in tokens[:-1]]
    source = torch.tensor([[eos] + tokens[:-1]])
    model.reset_memory()
    with torch.no_grad():
        output, extra = model(source, sentence_starts=torch.tensor([[s for s, _ in flags]]),
                              paragraph_starts=torch.tensor([[p for _, p in flags]]))
        lprobs = model.get_normalized_probs((output, extra), log_probs=True)[0]
    model.reset_memory()
    return lprobs, lprobs.gather(1, torch.tensor(tokens)[:, None])[:, 0]


def test_beam_search_scores_equal_a_full_forward(trained):
    """fairseq's SequenceGenerator over the incremental decoder: every hypothesis of a beam search (two prompts
    of different lengths in one batch, beams reordered at each step) is scored token by token as a full forward
    over that hypothesis scores it, to 1e-5."""
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    prompts = ["The lobster lives on rocky ground . The larva", "Each adult"]
    results = lm.generate(prompts, beam=3, max_len_b=24)
    assert len(results) == 2
    for prompt, hypotheses in zip(prompts, results):
        assert len(hypotheses) == 3
        prompt_ids = lm._prompt(prompt, None).tokens.tolist()
        for hypothesis in hypotheses:
            tokens = hypothesis["tokens"].tolist()
            assert tokens[:len(prompt_ids)] == prompt_ids and len(tokens) > len(prompt_ids)
            _, expected = _full_forward_log_probs(lm.model, tokens, lm.encoder)
            torch.testing.assert_close(hypothesis["positional_scores"], expected, rtol=0, atol=1e-5)


def test_generator_temperature_is_exact_with_an_adaptive_softmax(trained):
    """fairseq divides the decoder's output by --temperature; the incremental decoder outputs log-probabilities,
    so the tempered distribution is log_softmax(log p / T), with an adaptive softmax as well."""
    from omegaconf import open_dict

    from segatron_fairseq.hub.segatron_xl import SegatronXLHubInterface
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    cfg = copy.deepcopy(lm.model.decoder.cfg)
    with open_dict(cfg):
        cfg.adaptive_softmax_cutoff = "20,60"
    torch.manual_seed(0)
    adaptive = SegatronXLHubInterface(lm.cfg, lm.task, SegatronXLModel.build_model(cfg, lm.task))
    assert adaptive.model.decoder.adaptive_softmax is not None
    hypothesis = adaptive.generate("The lobster lives", beam=1, temperature=0.5, max_len_b=12)[0][0]
    tokens = hypothesis["tokens"].tolist()
    lprobs, _ = _full_forward_log_probs(adaptive.model, tokens, adaptive.encoder)
    tempered = torch.log_softmax(lprobs / 0.5, dim=-1).gather(1, torch.tensor(tokens)[:, None])[:, 0]
    torch.testing.assert_close(hypothesis["positional_scores"], tempered, rtol=0, atol=1e-5)


def test_generate_calls_are_reproducible_and_independent(trained):
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    options = dict(sampling=True, sampling_topk=5, temperature=0.9, max_len_b=30)
    first = lm.generate("The lobster lives", seed=4, **options)[0][0]["tokens"]
    lm.generate(["Each adult feeds near", "A"], beam=2, max_len_b=10)  # another call, other batch size
    lm.score((trained / "other.txt").read_text())  # and the model's own memory in use
    assert torch.equal(lm.generate("The lobster lives", seed=4, **options)[0][0]["tokens"], first)
    others = {tuple(lm.generate("The lobster lives", seed=s, sampling=True, sampling_topp=0.9,
                                max_len_b=30)[0][0]["tokens"].tolist()) for s in range(5)}
    assert len(others) > 1


def _hypotheses(output):
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^H-(\d+)\t\S+\t(.*)$", output, re.M)}


@pytest.mark.end_to_end
def test_fairseq_generate_and_interactive(trained, tmp_path):
    """fairseq-generate on a binarized prompt file (--sample-break-mode eos) and fairseq-interactive on raw
    lines continue each prompt; greedy decoding gives the hub's greedy tokens; a seed fixes sampling."""
    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    prompts = ["The lobster lives on rocky ground . The larva", "", "Each adult"]
    (tmp_path / "prompts.txt").write_text("\n".join(prompts) + "\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--testpref", tmp_path / "prompts.txt", "--destdir",
            tmp_path / "bin", "--srcdict", trained / "bin" / "dict.txt", "--sentence-splitter",
            trained / "bin" / "punkt_tab")
    checkpoint = trained / "ckpt" / "checkpoint_last.pt"
    common = ["--user-dir", PLUGIN_DIR, "--task", "segatron_lm", "--path", checkpoint, "--cpu", "--tgt-len", 16,
              "--max-len-b", 20]
    greedy = _hypotheses(run_cli("fairseq-generate", tmp_path / "bin", *common, "--sample-break-mode", "eos",
                                 "--gen-subset", "test", "--beam", 1, "--batch-size", 2))
    assert sorted(greedy) == [0, 1]  # the blank line is not a prompt
    lm = SegatronXLModel.from_pretrained(str(trained / "ckpt"), "checkpoint_last.pt", str(trained / "bin"))
    for number, prompt in enumerate([prompts[0], prompts[2]]):
        assert greedy[number].startswith(prompt + " ")
        expected = lm.generate(prompt, beam=1, max_len_b=20)[0][0]["tokens"][:-1].tolist()  # without </s>
        assert greedy[number] == " ".join(lm.task.dictionary[t] for t in expected)

    sampling = ["--sampling", "--sampling-topk", 5, "--sampling-topp", 0.9, "--temperature", 0.8, "--beam", 1]
    interactive = [run_cli("fairseq-interactive", trained / "bin", *common, *sampling, "--seed", seed, "--input",
                           tmp_path / "prompts.txt") for seed in (1, 1, 2)]
    first, again, other = (_hypotheses(out) for out in interactive)
    assert first == again and first != other
    assert sorted(first) == [0, 1, 2]  # interactive reads every line (a blank one has an empty prompt)
    assert first[0].startswith(prompts[0]) and first[2].startswith(prompts[2])
    assert len(first[0]) + len(first[2]) > len(prompts[0]) + len(prompts[2])


@pytest.mark.end_to_end
def test_interactive_reads_raw_text_with_the_corpus_sentencepiece(tmp_path):
    """On a sentencepiece corpus fairseq-interactive needs no --bpe: the task splits raw lines with the corpus's
    own model and joins the pieces of the output back into text."""
    from segatron_preprocess.text_encoder import TextEncoder

    binarized_training_text(tmp_path, 30, 61, "--bpe", "sentencepiece", "--bpe-vocab-size", 100)
    fairseq_train(tmp_path / "bin", task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                  save_dir=tmp_path / "ckpt", lr=2e-3, extra=["--batch-size", 4, "--tgt-len", 16, "--max-update", 2,
                                                             "--no-epoch-checkpoints", "--disable-validation"])
    prompt = "The lobster lives on rocky ground."
    (tmp_path / "prompts.txt").write_text(prompt + "\n")
    output = run_cli("fairseq-interactive", tmp_path / "bin", "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
                     "--path", tmp_path / "ckpt" / "checkpoint_last.pt", "--cpu", "--max-len-b", 30, "--min-len", 25,
                     "--input", tmp_path / "prompts.txt")
    pieces = re.search(r"^H-0\t\S+\t(.*)$", output, re.M).group(1).split()
    text = re.search(r"^D-0\t\S+\t(.*)$", output, re.M).group(1)
    prompt_pieces = TextEncoder(str(tmp_path / "bin")).segmenter.subwords.encode(prompt)
    assert len(pieces) >= 20 and pieces[:len(prompt_pieces)] == prompt_pieces
    assert text.startswith(prompt) and "\u2581" not in text and len(text.split()) < len(pieces)


def test_boundary_kinds_split_every_target_once():
    """segatron-compare-lm's kinds of target token: disjoint, every target in one, and each kind's mean loss."""
    from segatron_fairseq.evaluation.boundary_kinds import BOUNDARY_KINDS, boundary_kind_masks, losses_by_kind

    sentence_start = np.array([1, 0, 0, 1, 0, 1, 1, 0], bool)
    paragraph_start = np.array([1, 0, 0, 0, 0, 1, 0, 0], bool)
    masks = boundary_kind_masks(sentence_start, paragraph_start)
    assert list(masks) == list(BOUNDARY_KINDS)
    assert np.array_equal(sum(m.astype(int) for m in masks.values()), np.ones(8, int))
    assert np.flatnonzero(masks["sentence_start"]).tolist() == [3, 6]
    losses = np.arange(8, dtype=float)
    assert losses_by_kind(losses, sentence_start, paragraph_start) == {
        "paragraph_start": {"tokens": 2, "loss": 2.5}, "sentence_start": {"tokens": 2, "loss": 4.5},
        "other": {"tokens": 4, "loss": 3.5}}
    assert losses_by_kind(losses, sentence_start, sentence_start & False)["paragraph_start"] == {"tokens": 0,
                                                                                                 "loss": None}
