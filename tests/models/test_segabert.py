"""SegaBERT: embeddings, document examples, index rule, masking, pre-training."""
import re

import numpy as np
import pytest
import tiny_models
import torch
from conftest import binarized_training_text, fairseq_train, free_port, run_cli
from corpus import make_documents, write_wikitext
from fairseq.data import Dictionary

from segatron_fairseq.data import DocumentExampleDataset, SegmentIndexedDataset

LIMITS = {"paragraph": 50, "sentence": 100, "token": 256}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("segabert")
    documents = make_documents(30, seed=21)
    # one document with more than 50 paragraphs, to exercise the index rule
    documents.append([("title", [["=", "Long", "="]])] + [("text", [["Word", str(k % 7), "."]]) for k in range(70)])
    write_wikitext(tmp / "train.txt", documents)
    write_wikitext(tmp / "valid.txt", make_documents(5, seed=22))
    run_cli("segatron-preprocess", "--input-format", "wikitext", "--trainpref", tmp / "train.txt",
            "--validpref", tmp / "valid.txt", "--destdir", tmp / "bin")
    return tmp


def _examples(data, max_tokens=48, seed=1):
    d = Dictionary.load(str(data / "bin" / "dict.txt"))
    corpus = SegmentIndexedDataset(str(data / "bin" / "train"))
    return d, corpus, DocumentExampleDataset(corpus, d.bos(), d.eos(), max_tokens, LIMITS, seed)


def test_examples_are_whole_sentences_of_one_document(data):
    d, corpus, examples = _examples(data)
    tokens = corpus.token_array()
    table = examples.table
    for epoch in (1, 2):
        examples.set_epoch(epoch)
        for i in range(len(examples)):
            first, end = examples.first_sentence[i], examples.end_sentence[i]
            assert len(set(table.document[first:end])) == 1  # never across documents
            item = examples[i]
            assert len(item["tokens"]) == examples.sizes[i] <= 48
            expected = [t for k in range(first, end) for t in tokens[table.starts[k]:table.stops[k]] if t != d.eos()]
            body = item["tokens"][1:-1].tolist()
            assert body == expected[:46]
            # whole sentences unless a single sentence was too long
            if len(expected) <= 46 and end < table.document_first[table.document[first]] + \
                    table.document_sentences[table.document[first]]:
                assert len(expected) + table.lengths[end] > 46


def test_cls_and_sep_take_the_indexes_of_their_neighbours(data):
    d, corpus, examples = _examples(data)
    for i in range(len(examples)):
        item = examples[i]
        assert item["tokens"][0] == d.bos() and item["tokens"][-1] == d.eos()
        for name in ("paragraph", "sentence", "token"):
            values = item[name]
            assert values[0] == values[1] and values[-1] == values[-2]
            assert len(values) == len(item["tokens"])


def test_index_rule_shifts_then_clips():
    from segatron_fairseq.segments import fit_to_table as fit

    values, shifted, clipped = fit(np.array([48, 49, 50, 51]), 50)
    assert values.tolist() == [46, 47, 48, 49] and shifted and not clipped
    values, shifted, clipped = fit(np.array([0, 3, 60]), 50)
    assert values.tolist() == [0, 3, 49] and not shifted and clipped
    values, shifted, clipped = fit(np.array([5, 60]), 50)
    assert values.tolist() == [0, 49] and shifted and clipped
    values, shifted, clipped = fit(np.array([1, 2]), 50)
    assert values.tolist() == [1, 2] and not shifted and not clipped


def test_examples_fit_the_tables_and_count_adjustments(data):
    d, corpus, examples = _examples(data, max_tokens=64)
    adjusted = 0
    for i in range(len(examples)):
        item = examples[i]
        for name, limit in LIMITS.items():
            assert int(item[name].max()) < limit and int(item[name].min()) >= 0
        adjusted += item["shifted"] + item["clipped"]
    assert adjusted > 0  # the long document has paragraphs 50..70


def test_examples_depend_on_seed_epoch_and_index_only(data):
    _, _, a = _examples(data, seed=3)
    _, _, b = _examples(data, seed=3)
    b.set_epoch(2)
    b.set_epoch(1)
    assert all(torch.equal(a[i]["tokens"], b[i]["tokens"]) for i in range(len(a)))
    b.set_epoch(2)
    assert not all(torch.equal(a[i]["tokens"], b[i]["tokens"]) for i in range(len(a)))


def _segabert(task, arch, *extra, width=()):
    """``arch`` (at its own width unless ``width`` narrows it) built by ``task``, in eval mode."""
    return tiny_models.build(tiny_models.tiny_args(arch, *extra, width=width), task)


def test_embedding_is_the_sum_of_four_tables(data):
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(data / "bin"), tokens_per_sample=64, seed=1))
    for arch, segments in (("segabert_tiny", True), ("segabert_bert_tiny", False)):
        model = _segabert(task, arch, "--tokens-per-sample", 64)
        encoder = model.encoder
        src = torch.tensor([[0, 5, 6, 7, 2]])
        p, s, t = torch.tensor([[1, 1, 1, 2, 2]]), torch.tensor([[0, 0, 1, 0, 0]]), torch.tensor([[0, 0, 0, 0, 0]])
        expected = encoder.sentence_encoder.embed_tokens(src)
        if segments:
            tables = encoder.segment_embeddings
            expected = expected + tables["paragraph"](p) + tables["sentence"](s) + tables["token"](t)
            assert encoder.sentence_encoder.embed_positions is None
            assert [tables[n].num_embeddings for n in ("paragraph", "sentence", "token")] == [50, 100, 256]
        else:
            assert encoder.sentence_encoder.embed_positions is not None and len(encoder.segment_embeddings) == 0
        assert torch.equal(encoder.embed(src, p, s, t), expected)


def test_token_types_and_layer_norm_eps_in_the_base_sizes(data):
    """BERT's token-type table: on (2 types) in the base sizes, added to the embedding, all type 0 without
    ``token_type``; a checkpoint without the table (0.1.0) loads with a zero one; --layer-norm-eps reaches every
    LayerNorm."""
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(data / "bin"), tokens_per_sample=64, seed=1))
    narrow = tiny_models.as_options(encoder_layers=1, encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                                    encoder_attention_heads=2)
    for arch in ("segabert_base", "segabert_bert_base"):
        model = _segabert(task, arch, "--tokens-per-sample", 64, "--layer-norm-eps", "1e-12", width=narrow)
        encoder = model.encoder
        assert encoder.token_type_embeddings.num_embeddings == 2
        assert {m.eps for m in model.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-12}
        src, types = torch.tensor([[0, 5, 6, 2, 7, 2]]), torch.tensor([[0, 0, 0, 0, 1, 1]])
        zeros = torch.zeros_like(src)
        plain = encoder.embed(src, zeros, zeros, zeros)
        table = encoder.token_type_embeddings.weight
        torch.testing.assert_close(encoder.embed(src, zeros, zeros, zeros, types) - plain,
                                   (table[1] - table[0]) * types[..., None])
        assert torch.equal(plain, encoder.embed(src, zeros, zeros, zeros, zeros))
        with pytest.raises(ValueError, match="token_type 2 exceeds the 2 token types"):
            encoder.embed(src, zeros, zeros, zeros, types * 2)
        state = {k: v for k, v in model.state_dict().items() if k != "encoder.token_type_embeddings.weight"}
        model.load_state_dict(state)
        assert not encoder.token_type_embeddings.weight.any()
    assert _segabert(task, "segabert_tiny").encoder.token_type_embeddings is None


def test_masking_rates_and_determinism(data):
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(data / "bin"), tokens_per_sample=64, seed=7,
                                                        examples_per_epoch=2000))
    task.load_dataset("train")
    dataset = task.dataset("train")
    dataset.set_epoch(1)
    masked = kept = randomised = total = 0
    for i in range(len(dataset)):
        item = dataset[i]
        source, target = item["net_input.src_tokens"], item["target"]
        chosen = target != task.dictionary.pad()
        total += len(source) - 2
        masked += int(chosen.sum())
        kept += int((chosen & (source == target)).sum())
        randomised += int((chosen & (source != target) & (source != task.mask_idx)).sum())
    assert masked / total == pytest.approx(0.15, abs=0.01)
    assert kept / masked == pytest.approx(0.1, abs=0.02)
    assert randomised / masked == pytest.approx(0.1, abs=0.02)
    again = dataset[5]["net_input.src_tokens"]
    dataset.set_epoch(2)
    dataset.set_epoch(1)
    assert torch.equal(dataset[5]["net_input.src_tokens"], again)


TRAIN = ["--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", 10, "--tokens-per-sample", 48,
         "--batch-size", 8, "--seed", 1]


@pytest.mark.end_to_end
def test_tiny_model_overfits_a_tiny_corpus(tmp_path):
    binarized_training_text(tmp_path, 4, 5)
    out = fairseq_train(tmp_path / "bin", task="segabert_mlm", arch="segabert_tiny", criterion="masked_lm",
                        save_dir=tmp_path / "ckpt", lr=3e-3,
                        extra=[*TRAIN, "--max-update", 300, "--dropout", 0, "--attention-dropout", 0,
                               "--examples-per-epoch", 2400])  # one epoch of 300 batches, validated at its end
    losses = [float(x) for x in re.findall(r"valid on 'valid' subset \| loss ([0-9.]+)", out)]
    first = float(re.search(r"train_inner .*?loss=([0-9.]+)", out).group(1))
    assert first > 5 and losses[-1] < 2.0, (first, losses)
    assert "index_shifted=" in out


@pytest.mark.end_to_end
@pytest.mark.parametrize("launcher", ["fairseq", "torchrun"])
def test_distributed_two_processes_on_cpu(data, tmp_path, launcher):
    if launcher == "fairseq":
        command = ("fairseq-train", "--distributed-world-size", 2)
    else:
        command = ("torchrun", "--nproc_per_node", 2, "--master_addr", "127.0.0.1", "--master_port", free_port(),
                   "-m", "fairseq_cli.train")
    out = fairseq_train(data / "bin", task="segabert_mlm", arch="segabert_tiny", criterion="masked_lm",
                        save_dir=tmp_path / "ckpt", lr=3e-3, extra=[*TRAIN, "--max-update", 5, "--ddp-backend",
                                                                     "legacy_ddp"],
                        command=command, separate_process=True)
    assert "as rank 1" in out and re.search(r"num_updates[ =]5\b", out)
    assert (tmp_path / "ckpt" / "checkpoint_last.pt").exists()


def test_factorized_embedding_projects_the_tables_to_the_hidden_size(data):
    """--factorized-embed-dim E: word, index and token-type tables E wide, their sum LayerNormed at E, projected to
    H before the first layer; the LM head maps H back to E and decodes with the tied (V, E) word table. Without
    the option the state dict's names and shapes are as before."""
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(SegaBERTMLMConfig(data=str(data / "bin"), tokens_per_sample=64, seed=1))

    def build(arch, *extra):
        return _segabert(task, arch, "--tokens-per-sample", 64, "--num-token-types", 2, *extra)

    for arch in ("segabert_tiny", "segabert_bert_tiny"):
        plain, factorized = build(arch), build(arch, "--factorized-embed-dim", "16")
        plain_shapes = {k: tuple(v.shape) for k, v in plain.state_dict().items()}
        assert "encoder.sentence_encoder.embedding_projection.weight" not in plain_shapes
        assert plain_shapes["encoder.lm_head.dense.weight"] == (64, 64)
        encoder = factorized.encoder
        sentence_encoder = encoder.sentence_encoder
        shapes = {k: tuple(v.shape) for k, v in factorized.state_dict().items()}
        assert shapes["encoder.sentence_encoder.embed_tokens.weight"] == (len(task.dictionary), 16)
        assert shapes["encoder.sentence_encoder.embedding_projection.weight"] == (64, 16)
        assert shapes["encoder.lm_head.dense.weight"] == (16, 64)
        assert shapes["encoder.token_type_embeddings.weight"] == (2, 16)
        assert all(table.embedding_dim == 16 for table in encoder.segment_embeddings.values())
        assert set(shapes) - set(plain_shapes) == {"encoder.sentence_encoder.embedding_projection.weight",
                                                   "encoder.sentence_encoder.embedding_projection.bias"}
        src = torch.tensor([[0, 5, 6, 7, 2]])
        p, s, t = torch.tensor([[1, 1, 1, 2, 2]]), torch.tensor([[0, 0, 1, 0, 0]]), torch.tensor([[0, 1, 0, 0, 0]])
        summed = encoder.embed(src, p, s, t)
        if sentence_encoder.embed_positions is not None:
            summed = summed + sentence_encoder.embed_positions(src)
        x = sentence_encoder.embedding_projection(sentence_encoder.layernorm_embedding(summed)).transpose(0, 1)
        for layer in sentence_encoder.layers:
            x = layer(x, encoder_padding_mask=None)
        features = x.transpose(0, 1)
        head = encoder.lm_head
        expected = torch.nn.functional.layer_norm(
            torch.nn.functional.gelu(features @ head.dense.weight.T + head.dense.bias), (16,),
            head.layer_norm.weight, head.layer_norm.bias, head.layer_norm.eps) @ sentence_encoder.embed_tokens.weight.T
        logits, _ = factorized(src, paragraph_index=p, sentence_index=s, token_index=t)
        torch.testing.assert_close(logits, expected + head.bias, rtol=1e-5, atol=1e-5)
