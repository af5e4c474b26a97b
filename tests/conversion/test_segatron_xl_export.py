"""segatron-export hf of segatron_xl checkpoints (Segatron-XL with the exact Eq. 3 or the authors' window_end
distances, Transformer-XL, adaptive input and softmax with biases or tied): the remote-code
SegatronXLForCausalLM loaded by transformers==4.35.2 and by the newest release reads a corpus's text in segments,
with its sentence / paragraph starts and the memory it returns, and gives the log-probability of every word of
the vocabulary that the fairseq model gives reading the same segments in eval mode with its memory (1e-5), so
the perplexity is the same."""
import json
import math
import sys
from pathlib import Path

import pytest
import torch
from conftest import binarized_wikitext, run_cli
from shipped_imports import assert_imports_only
from test_importers import SEGATRON_XL, in_their_output_order, needs_authors_fixture
from transformers_newest import newest_causal_lm_runs, newest_tokenizer_and_pipeline

TGT_LEN = 40
STREAM_TOKENS = 150  # four segments, the last one short

# each case: the architecture and options of a random model; "{c1},{c2}" become cutoffs inside the vocabulary
CASES = {
    "segatron_query_pre_norm_same_length": ["--arch", "segatron_xl_tiny", "--mem-len", "24", "--pre-norm",
                                            "--same-length"],
    "segatron_window_end_clamped_per_layer_biases": ["--arch", "segatron_xl_tiny", "--segment-distance-origin",
                                                     "window_end", "--clamp-len", "10",
                                                     "--per-layer-position-biases"],
    "transformer_xl": ["--arch", "transformer_xl_tiny", "--mem-len", "20"],
    "adaptive_input_and_biased_softmax": ["--arch", "segatron_xl_tiny", "--adaptive-input",
                                          "--adaptive-softmax-cutoff", "{c1},{c2}", "--adaptive-softmax-factor",
                                          "2", "--adaptive-softmax-bias"],
    "adaptive_tied_weights_and_projections": ["--arch", "transformer_xl_tiny", "--adaptive-input",
                                              "--adaptive-softmax-cutoff", "{c1},{c2}", "--adaptive-softmax-factor",
                                              "2", "--tie-adaptive-weights", "--tie-adaptive-proj"],
    "adaptive_tied_weights_biased": ["--arch", "segatron_xl_tiny", "--adaptive-input", "--adaptive-softmax-cutoff",
                                     "{c1}", "--adaptive-softmax-factor", "2", "--tie-adaptive-weights",
                                     "--adaptive-softmax-bias", "--segment-distance-origin", "window_end"],
    "token_table_and_adaptive_softmax": ["--arch", "segatron_xl_tiny", "--adaptive-softmax-cutoff", "{c1},{c2}",
                                         "--adaptive-softmax-factor", "2"],
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A binarized WikiText corpus (6 documents, 2 for valid): its bin directory."""
    return binarized_wikitext(tmp_path_factory.mktemp("segatron_xl_export"), 6, 2, seed=17) / "bin"


def _random_checkpoint(directory, corpus, options):
    """A segatron_xl checkpoint of ``options`` (fairseq-train's) with the corpus's dictionary, every tensor
    moved off its (seeded) initialisation by N(0, 0.1) (LayerNorms, biases, u / v, adaptive softmax biases all differ
    from their starting values)."""
    from fairseq import options as fairseq_options
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from segatron_fairseq import PLUGIN_DIR
    from segatron_fairseq.conversion.importers.fairseq_checkpoint import write_checkpoint

    size = len((corpus / "dict.txt").read_text().splitlines()) + 4
    options = [option.format(c1=size // 4, c2=size // 2) for option in options]
    args = fairseq_options.parse_args_and_arch(fairseq_options.get_training_parser(),
                                               [str(corpus), "--user-dir", PLUGIN_DIR, "--task", "segatron_lm",
                                                *options])
    task = tasks.setup_task(convert_namespace_to_omegaconf(args).task)
    torch.manual_seed(0)  # the same model in every run
    model = task.build_model(convert_namespace_to_omegaconf(args).model)
    generator = torch.Generator().manual_seed(3)
    state = {name: value + 0.1 * torch.randn(value.shape, generator=generator) if value.is_floating_point()
             else value for name, value in model.state_dict().items()}
    return write_checkpoint(directory, task.source_dictionary, "segatron_lm", options, state)


def _stream(corpus):
    """The first STREAM_TOKENS tokens of the valid split with their start flags, and what the model reads to
    predict them ([eos] + tokens[:-1], each with its flags)."""
    from segatron_fairseq.evaluation.token_losses import read_stream, stream_inputs

    tokens, sentence, paragraph = (a[:STREAM_TOKENS] for a in read_stream(str(corpus / "valid")))
    assert sentence[1:].sum() >= 4 and paragraph[1:].sum() >= 1  # the text has sentences and paragraphs
    return tokens, sentence, paragraph, stream_inputs(tokens, sentence, paragraph, eos=2)


def _segments(source, source_sentence, source_paragraph):
    """The model's inputs, segment by segment of TGT_LEN: input_ids, sentence_starts, paragraph_starts (1, T)."""
    return [{"input_ids": torch.from_numpy(source[i:i + TGT_LEN])[None],
             "sentence_starts": torch.from_numpy(source_sentence[i:i + TGT_LEN])[None],
             "paragraph_starts": torch.from_numpy(source_paragraph[i:i + TGT_LEN])[None]}
            for i in range(0, len(source), TGT_LEN)]


def _fairseq_log_probs(checkpoint, segments):
    """(N, V) log-probabilities of the fairseq model over the segments read one after another in eval mode with
    its memory (the evaluation memory, as fairseq-eval-lm runs it); and the model."""
    from fairseq import checkpoint_utils

    model = checkpoint_utils.load_model_ensemble([str(checkpoint)])[0][0].eval()
    model.reset_memory(training=False)
    log_probs = []
    with torch.no_grad():
        for segment in segments:
            features, _ = model(segment["input_ids"], sentence_starts=segment["sentence_starts"],
                                paragraph_starts=segment["paragraph_starts"])
            log_probs.append(model.get_normalized_probs((features, None), log_probs=True, sample=None)[0])
    model.reset_memory(training=False)
    return torch.cat(log_probs), model


def _exported(tmp_path, corpus, case, mem_len=None):
    """A random checkpoint of ``CASES[case]`` (with ``--mem-len mem_len`` when given), exported."""
    options = CASES[case] if mem_len is None else [*CASES[case], "--mem-len", str(mem_len)]
    checkpoint = _random_checkpoint(tmp_path / "model", corpus, options)
    out = tmp_path / f"hf_{case}_{mem_len}"  # the dynamic-module cache is named after the directory
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", corpus, "--out", out)
    return checkpoint, out


@pytest.mark.parametrize("case", CASES)
def test_export_reads_segments_with_memory_as_fairseq_does(tmp_path, corpus, case):
    from transformers import AutoModelForCausalLM

    from segatron_fairseq.evaluation.token_losses import stream_losses

    checkpoint, out = _exported(tmp_path, corpus, case)
    tokens, sentence, paragraph, source = _stream(corpus)
    segments = _segments(*source)
    expected, fairseq_model = _fairseq_log_probs(checkpoint, segments)

    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    assert type(model).__name__ == "SegatronXLForCausalLM"
    memory, logits = None, []
    with torch.no_grad():
        for segment in segments:
            result = model(**segment, past_key_values=memory)
            memory = result.past_key_values
            logits.append(result.logits[0])
    assert memory.get_seq_length() == fairseq_model.decoder.cfg.mem_len
    log_probs = torch.cat(logits).log_softmax(dim=-1)
    assert log_probs.shape == expected.shape == (STREAM_TOKENS, len(fairseq_model.decoder.dictionary))
    torch.testing.assert_close(log_probs, expected, rtol=0, atol=1e-5)

    # the perplexity of fairseq-eval-lm's loop (hub.token_losses) through transformers
    target = torch.from_numpy(tokens)
    ours = -log_probs.gather(1, target[:, None])[:, 0].double()
    theirs = torch.from_numpy(stream_losses(fairseq_model, tokens, sentence, paragraph, TGT_LEN))
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
    assert math.exp(ours.mean()) == pytest.approx(math.exp(theirs.mean()), rel=1e-6)


NEWEST_CASES = ("segatron_query_pre_norm_same_length", "segatron_window_end_clamped_per_layer_biases", "transformer_xl",
                "adaptive_input_and_biased_softmax", "adaptive_tied_weights_and_projections")


@pytest.mark.end_to_end
def test_newest_transformers_reads_and_generates_as_fairseq_does(tmp_path, corpus):
    """In the newest release (one process for all): every log-probability of five exports over the segments with
    their memory equals fairseq's to 1e-5; greedy generate() (the release passes the memory to the model as
    ``cache``) of a Transformer-XL and of Segatron-XL with each distance kind, the new tokens flagged by the
    tokenizer the model loaded, gives the tokens and scores of generate() in 4.35.2."""
    from transformers import AutoModelForCausalLM

    segments = _segments(*_stream(corpus)[3])
    prompt = segments[0]["input_ids"][:, :12]
    generating = ("transformer_xl", "segatron_query_pre_norm_same_length",
                  "segatron_window_end_clamped_per_layer_biases")
    exports = {case: _exported(tmp_path / case, corpus, case) for case in NEWEST_CASES}
    results = newest_causal_lm_runs(tmp_path, {out: {"segments": segments,
                                                     "generate": (prompt, 30) if case in generating else None}
                                               for case, (_, out) in exports.items()})
    for case, (checkpoint, out) in exports.items():
        expected, _ = _fairseq_log_probs(checkpoint, segments)
        log_probs = torch.cat([segment[0] for segment in results[str(out)]["logits"]]).log_softmax(dim=-1)
        torch.testing.assert_close(log_probs, expected, rtol=0, atol=1e-5, msg=case)
        if case not in generating:
            continue
        model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
        with torch.no_grad():
            here = model.generate(prompt, max_new_tokens=30, do_sample=False, output_scores=True,
                                  return_dict_in_generate=True)
        generated = results[str(out)]
        assert generated["sequences"].tolist() == here.sequences.tolist(), case
        torch.testing.assert_close(generated["scores"][0], torch.stack([step[0] for step in here.scores]), rtol=0,
                                   atol=1e-5, msg=case)


def test_shipped_modules_import_only_torch_the_standard_library_and_each_other(tmp_path, corpus):
    """transformers copies the remote code's relative imports into its module cache: the plugin's modules shipped
    in the directory must not import the plugin or fairseq; the model's import torch, the tokenizer's numpy, NLTK,
    sentencepiece or tokenizers (the remote code's own files: transformers too)."""
    _, out = _exported(tmp_path, corpus, "transformer_xl")
    shipped = {path.stem for path in out.glob("*.py")}
    assert {"segment_distances", "segment_relative_attention", "segatron_xl_layer", "segatron_xl_stack",
            "segment_memory", "modeling_segatron_xl", "configuration_segatron_xl", "tokenization_segment_indexes",
            "generation_indexer", "sentences", "document_items"} <= shipped
    assert_imports_only(out, {"torch", "numpy", "nltk", "sentencepiece", "tokenizers"},
                        lambda stem: stem.endswith("_segatron_xl") or stem.startswith("tokenization_"))


def test_one_forward_refuses_more_than_its_stated_number_of_tokens(tmp_path, corpus):
    """The attention of one forward grows with the square of its length: a row longer than MAX_SEGMENT_TOKENS
    (4,096, the bound the module doc states) is refused before anything is computed, and says how to read a long
    text (a row of exactly that length is read: the next test)."""
    from transformers import AutoModelForCausalLM

    _, out = _exported(tmp_path, corpus, "transformer_xl")
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    assert sys.modules[type(model).__module__].MAX_SEGMENT_TOKENS == 4096
    with pytest.raises(ValueError, match="input_ids holds 4,097 tokens per row: SegatronXLForCausalLM reads at most "
                                         "4,096 in one forward .* passing each forward's past_key_values"):
        model(torch.full((1, 4097), 5))


@pytest.mark.end_to_end  # one forward at the stated bound
def test_one_forward_reads_its_stated_number_of_tokens(tmp_path, corpus):
    from transformers import AutoModelForCausalLM

    _, out = _exported(tmp_path, corpus, "transformer_xl")
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    with torch.no_grad():
        assert model(torch.full((1, 4096), 5)).logits.shape[:2] == (1, 4096)


def test_export_refuses_a_corpus_whose_dictionary_is_not_the_checkpoints(tmp_path, corpus):
    checkpoint = _random_checkpoint(tmp_path / "model", corpus, CASES["transformer_xl"])
    (tmp_path / "other.txt").write_text("a few other words .\n")
    other = tmp_path / "other"
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "other.txt", "--destdir",
            other)
    out = run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", other, "--out", tmp_path / "hf",
                  expect_ok=False)
    assert str(checkpoint) in out and not (tmp_path / "hf").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("hf")]  # nor hf.partial


PROMPT = ("The lobster lives near the coast of Norway . It hides under a ledge .\n"
          "A female grows in deep water . The larva")
GENERATION_CASES = {"segatron_query": (["--arch", "segatron_xl_tiny", "--mem-len", "20", "--tgt-len", "16"], 60),
                    "segatron_window_end": (["--arch", "segatron_xl_tiny", "--mem-len", "20", "--tgt-len", "16",
                                             "--segment-distance-origin", "window_end"], 40),
                    "transformer_xl_no_memory": (["--arch", "transformer_xl_tiny", "--mem-len", "0",
                                                  "--tgt-len", "24"], 40)}


@pytest.mark.parametrize("case", GENERATION_CASES)
def test_generate_continues_a_text_with_the_tokens_of_fairseqs_sampler(tmp_path, corpus, case, monkeypatch):
    """Greedy generate() on the exported tokenizer's layout of a raw prompt gives the tokens of the fairseq hub's
    sampler (top-1, which never draws <pad> or <s>) for the same prompt: the prompt's starts from the tokenizer,
    each new token's from the indexer, at most mem_len + tgt_len keys a query (the prompt and the generated text
    run past that window), the window read again each step with window_end distances or no memory. Without the
    tokenizer's starts (as pipeline('text-generation') calls it) the prompt is flagged token by token, as
    fairseq-generate forces it: its tokens are fairseq-generate's greedy search's (beam 1). Sampling with top-k,
    top-p and a temperature draws the hub's tokens for the same seed; plain sampling, past </s>, draws every token
    from the hub's distribution (1e-5 in each log-probability), through new sentences and paragraphs whose starts
    the indexer gives. Padded rows are refused."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

    from segatron_fairseq.models.segatron_xl import SegatronXLModel

    options, steps = GENERATION_CASES[case]
    checkpoint = Path(_random_checkpoint(tmp_path / "model", corpus, options))
    out = tmp_path / f"hf_{case}"
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", corpus, "--out", out)
    hub = SegatronXLModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(corpus))
    # window_end distances are not causal: the sampler reads the window again each token (incremental=False)
    expected = _up_to_eos(hub.sample_tokens(PROMPT, max_len=steps, topk=1, incremental=case != "segatron_window_end"),
                          hub.task.dictionary.eos())
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    encoded = tokenizer(PROMPT, return_tensors="pt")
    assert encoded["input_ids"].size(1) + steps > model.config.generation_window
    with torch.no_grad():
        generated = model.generate(**encoded, max_new_tokens=steps, do_sample=False)
        assert generated[0, encoded["input_ids"].size(1):].tolist() == expected
        flagged_by_indexer = model.generate(encoded["input_ids"], max_new_tokens=steps, do_sample=False)
    assert flagged_by_indexer[0].tolist() == generated[0].tolist()
    text = pipeline("text-generation", model=str(out), trust_remote_code=True)(PROMPT, max_new_tokens=steps,
                                                                             do_sample=False)[0]["generated_text"]
    continuation = tokenizer.decode(generated[0, encoded["input_ids"].size(1):])
    assert text.startswith(PROMPT) and continuation.strip() and continuation.strip() in text
    sampled = hub.sample_tokens(PROMPT, max_len=steps, topk=50, topp=0.95, temperature=3.0, seed=7,
                                incremental=case != "segatron_window_end")
    torch.manual_seed(7)  # the draws of transformers' sampler come from torch's global generator
    with torch.no_grad():
        drawn = model.generate(**encoded, max_new_tokens=steps, do_sample=True, top_k=50, top_p=0.95,
                               temperature=3.0)[0, encoded["input_ids"].size(1):].tolist()
    assert drawn == _up_to_eos(sampled, hub.task.dictionary.eos()) and len(set(drawn)) > 3
    _assert_sampled_from_the_hubs_distributions(hub, model, encoded, steps, case, monkeypatch)
    if case != "segatron_window_end":  # fairseq's SequenceGenerator decodes incrementally: causal distances only
        # fairseq-generate's greedy search (the hub's generate, beam 1), its prefix the prompt without the leading
        # </s>, flagged token by token: the tokens generate() gives without the tokenizer's starts
        forced = hub.generate(PROMPT, beam=1, max_len_b=steps)[0][0]["tokens"].tolist()
        assert flagged_by_indexer[0, 1:].tolist()[:len(forced)] == forced[:flagged_by_indexer.size(1) - 1]
    padded = torch.ones_like(encoded["input_ids"])
    padded[0, 0] = 0
    with pytest.raises(ValueError, match="attention_mask hides positions"):
        model.generate(encoded["input_ids"], attention_mask=padded, max_new_tokens=2)


@pytest.mark.end_to_end
def test_text_generation_pipeline_gives_the_same_text_in_both_releases(tmp_path, corpus):
    """transformers 5's text-generation pipeline samples at temperature 0.7 unless the model's generation config
    says otherwise, and appends the decoded new tokens to the prompt: the export's generation_config.json asks
    for greedy decoding, and its tokenizer decodes tokens that continue a text with the space before their first
    word, so given no option the pipeline writes in 5.x the text it writes in 4.35.2, the prompt followed by
    greedy generate()'s tokens."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

    checkpoint = Path(_random_checkpoint(tmp_path / "model", corpus, GENERATION_CASES["segatron_query"][0]))
    out = tmp_path / "hf"
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", corpus, "--out", out)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    prompt = tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        greedy = model.generate(prompt, max_new_tokens=12, do_sample=False)[0]
    continuation = tokenizer.decode(greedy[prompt.size(1):])
    assert continuation.startswith(" ") and not continuation.startswith("  ")
    assert tokenizer.decode(greedy, skip_special_tokens=True) == tokenizer.decode(prompt[0], skip_special_tokens=True) \
        + continuation  # the whole sequence, which opens with the stream's </s>, has no leading space
    here = pipeline("text-generation", model=str(out), trust_remote_code=True)(PROMPT, max_new_tokens=12)
    newest = newest_tokenizer_and_pipeline(tmp_path, out, "text-generation", [(PROMPT,)], PROMPT, max_new_tokens=12)
    assert here[0]["generated_text"] == PROMPT + continuation
    assert newest["pipeline"][0]["generated_text"] == PROMPT + continuation, newest["version"]


def _assert_sampled_from_the_hubs_distributions(hub, model, encoded, steps, case, monkeypatch):
    """Sampling at temperature 3 (the random models' distributions are sharp; seed 1; transformers' default
    top-k of 50 turned off, not stopping at </s>): the hub's tokens, each drawn from the hub's distribution at
    that step (its log-probabilities recorded as its sampler draws them, over the temperature, <pad> and <s> left
    out as both samplers leave them out); the sample ends a paragraph and starts sentences, so the indexer's
    flags of new tokens took part."""
    from segatron_fairseq.generation import sampling

    recorded, draw = [], sampling.next_token
    monkeypatch.setattr(sampling, "next_token", lambda lprobs, *rest: recorded.append(lprobs.float()) or
                        draw(lprobs, *rest))
    ours = hub.sample_tokens(PROMPT, max_len=steps, temperature=3.0, seed=1,
                             incremental=case != "segatron_window_end")
    monkeypatch.undo()
    # past </s>: eos_token_id=None given to generate() falls back on generation_config.json's in 4.35.2
    monkeypatch.setattr(model.generation_config, "eos_token_id", None)
    torch.manual_seed(1)
    with torch.no_grad():
        theirs = model.generate(**encoded, max_new_tokens=steps, do_sample=True, top_k=0, temperature=3.0,
                                output_scores=True, return_dict_in_generate=True)
    monkeypatch.undo()
    assert theirs.sequences[0, encoded["input_ids"].size(1):].tolist() == ours
    dictionary = hub.task.dictionary
    expected = torch.stack(recorded) / 3.0
    expected[:, [dictionary.pad(), dictionary.bos()]] = float("-inf")
    expected = expected.log_softmax(dim=-1)
    drawn_from = torch.stack([step[0] for step in theirs.scores]).float().log_softmax(dim=-1)
    finite = torch.isfinite(expected)
    assert torch.equal(finite, torch.isfinite(drawn_from))
    torch.testing.assert_close(drawn_from[finite], expected[finite], rtol=0, atol=1e-5)
    indexer = hub.encoder.generation_indexer()
    prompt = hub._prompt(PROMPT, None).tokens.tolist()
    flags = [indexer.push(token) for token in prompt + ours][len(prompt):]
    assert dictionary.eos() in ours and sum(s for s, _ in flags) >= 2 and any(p for _, p in flags)


def _up_to_eos(tokens, eos):
    """``tokens`` up to and including the first ``eos``: where generate() stops, while the hub's sampler goes on
    with the next paragraph."""
    return tokens[:tokens.index(eos) + 1] if eos in tokens else tokens


def test_generate_continues_after_a_given_memory_and_a_resaved_model_loads_again(tmp_path, corpus):
    """generate(past_key_values=the memory after text A) reads the prompt B after it: its first scores are those of
    reading B after A. A model written by save_pretrained loads again: without tokenizer files it reads text and
    generate() asks for its tokenizer; with the tokenizer saved beside it, it generates as before."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    checkpoint = _random_checkpoint(tmp_path / "model", corpus, GENERATION_CASES["segatron_query"][0])
    out = tmp_path / "hf_given_memory"
    run_cli("segatron-export", "hf", "--checkpoint", checkpoint, "--data", corpus, "--out", out)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    model = AutoModelForCausalLM.from_pretrained(out, trust_remote_code=True).eval()
    before = tokenizer("Mr. Smith fished near St. Mary 's Bay .\n", return_tensors="pt")
    prompt = tokenizer("The lobster lives near the coast of Norway . It hides", return_tensors="pt")
    with torch.no_grad():
        after_a = model(**prompt, past_key_values=model(**before).past_key_values).logits[0, -1]
        generated = model.generate(**prompt, past_key_values=model(**before).past_key_values, max_new_tokens=5,
                                   do_sample=False, output_scores=True, return_dict_in_generate=True)
        alone = model.generate(**prompt, max_new_tokens=5, do_sample=False, output_scores=True,
                               return_dict_in_generate=True)
    suppressed = [model.config.pad_token_id, model.config.bos_token_id]
    expected = after_a.clone()
    expected[suppressed] = float("-inf")
    torch.testing.assert_close(generated.scores[0][0], expected, rtol=0, atol=1e-5)
    assert not torch.allclose(alone.scores[0][0], expected)  # the memory mattered
    model.save_pretrained(tmp_path / "resaved")
    bare = AutoModelForCausalLM.from_pretrained(tmp_path / "resaved", trust_remote_code=True).eval()
    with torch.no_grad():
        torch.testing.assert_close(bare(**prompt).logits, model(**prompt).logits, rtol=0, atol=0)
    with pytest.raises(ValueError, match="segment_tokenizer"):
        bare.generate(prompt["input_ids"], max_new_tokens=2)
    tokenizer.save_pretrained(tmp_path / "resaved")
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "resaved", trust_remote_code=True).eval()
    with torch.no_grad():
        assert again.generate(**prompt, max_new_tokens=5, do_sample=False).tolist() == alone.sequences.tolist()


@needs_authors_fixture
def test_the_authors_imported_segatron_xl_exported_reproduces_their_nll(tmp_path):
    """The authors' Segatron-XL (window_end distances, adaptive input and softmax with tied projections, shared
    u / v), imported, then exported: reading their segments with the memory it returns, the Hugging Face model
    gives the NLL of every token that their code computed (1e-5)."""
    from transformers import AutoModelForCausalLM

    from segatron_fairseq.conversion.importers.vocabulary import map_vocabulary, read_words

    run_cli("segatron-import", "authors-segatron-xl", "--state", SEGATRON_XL / "model_state.pt", "--config",
            SEGATRON_XL / "config.json", "--vocab", SEGATRON_XL / "vocab.txt", "--out", tmp_path / "imported")
    words = [w.strip() for w in (SEGATRON_XL / "vocab.txt").read_text().splitlines()][1:]
    (tmp_path / "text.txt").write_text("\n".join(" ".join(words[i:i + 9]) + " ." for i in range(0, 90, 9)) + "\n")
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "text.txt", "--srcdict",
            tmp_path / "imported" / "dict.txt", "--destdir", tmp_path / "bin")
    run_cli("segatron-export", "hf", "--checkpoint", tmp_path / "imported" / "checkpoint.pt", "--data",
            tmp_path / "bin", "--out", tmp_path / "hf_authors")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "hf_authors", trust_remote_code=True).eval()
    config = json.loads((SEGATRON_XL / "config.json").read_text())
    index = map_vocabulary(read_words(str(SEGATRON_XL / "vocab.txt")), config["cutoffs"], "vocab").index
    memory = None
    with torch.no_grad():
        for segment, their_nll in zip(torch.load(SEGATRON_XL / "inputs.pt", weights_only=False),
                                      torch.load(SEGATRON_XL / "expected.pt", weights_only=False)["nll"]):
            output = model(index[segment["data"].t()], sentence_starts=segment["sentence_starts"].t(),
                           paragraph_starts=segment["paragraph_starts"].t(), past_key_values=memory)
            memory = output.past_key_values
            log_probs = output.logits.log_softmax(dim=-1)
            nll = -log_probs.gather(-1, index[segment["target"].t()][..., None])[..., 0].t()
            torch.testing.assert_close(in_their_output_order(nll, segment["target"], config["cutoffs"]), their_nll,
                                       rtol=0, atol=1e-5)
