"""Cross-Thought fine-tuning and ranking: answer-selection loss and metrics, pair classification,
cross-thought-rank with cached passage embeddings."""
import json
import math
import random
import re

import pytest
import torch
from conftest import fairseq_train, run_cli
from corpus import write_lines

from segatron_fairseq.criterions.cross_thought_answer_selection import (
    CrossThoughtAnswerSelectionCriterion,
    answer_ranks,
)


def test_answer_selection_loss_and_metrics_by_hand():
    alpha = torch.tensor([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    answers = torch.tensor([2, 0, 1])
    # row 3: 0.6 beats the answer, the tie at 0.2 does not count against it
    assert answer_ranks(alpha, answers).tolist() == [2, 1, 2]

    class Model:
        def __call__(self, src_tokens, cross_only):
            full = torch.zeros(3, 4, 4)
            full[:, 0, 1:] = alpha
            return None, {"cross_attention": full}

    criterion = CrossThoughtAnswerSelectionCriterion.__new__(CrossThoughtAnswerSelectionCriterion)
    criterion.recall_k = 1
    sample = {"net_input": {"src_tokens": None}, "target": answers, "ntokens": 10}
    loss, size, log = criterion.forward(Model(), sample)
    assert size == 3
    assert float(loss) == pytest.approx(-(math.log(0.4) + math.log(0.6) + math.log(0.2)), rel=1e-6)
    assert log["hits_at_1"] == 1 and log["hits_at_k"] == 1 and log["reciprocal_rank"] == pytest.approx(2.0)


@pytest.fixture(scope="session")
def pretrained(cross_thought_trained):
    return cross_thought_trained


FINETUNE = ["--reset-optimizer", "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
            "--log-format", "simple", "--seed", 1]


def _finetune(data, pretrained, task, criterion, save_dir, *extra, save=False):
    """fairseq-train of ``task`` from the pre-trained cross_thought_tiny (``save``: the last checkpoint only)."""
    saving = ["--no-epoch-checkpoints", "--no-last-checkpoints"] if save else ["--no-save"]
    return fairseq_train(data, task=task, arch="cross_thought_tiny", criterion=criterion, save_dir=save_dir,
                         extra=[*FINETUNE, *saving, "--pretrain-data", pretrained / "bin", "--restore-file",
                                pretrained / "ckpt" / "checkpoint_last.pt", *extra])


@pytest.mark.end_to_end
def test_answer_selection_finetuning_learns_to_rank(pretrained, tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(8)]
    data = tmp_path / "qa"
    data.mkdir()
    for split, n in (("train", 300), ("valid", 60)):
        with open(data / f"{split}.jsonl", "w") as f:
            for _ in range(n):
                topic = rng.randrange(len(words))
                candidates = [" ".join(rng.sample([w for k, w in enumerate(words) if k != topic], 3))
                              for _ in range(4)]
                answer = rng.randrange(4)
                candidates[answer] = f"{words[topic]} {candidates[answer]}"
                f.write(json.dumps({"question": f"about {words[topic]}", "candidates": candidates,
                                    "answer": answer}) + "\n")
    out = _finetune(data, pretrained, "cross_thought_answer_selection", "cross_thought_answer_selection",
                    tmp_path / "ft", "--recall-k", 2, "--batch-size", 16, "--max-epoch", 10)
    assert "Loaded checkpoint" in out
    valid = re.findall(r"valid on 'valid' subset \| loss ([0-9.]+) .*?recall_at_1 ([0-9.]+) \| recall_at_k ([0-9.]+) "
                       r"\| mrr ([0-9.]+)", out)
    first, last = [tuple(map(float, v)) for v in (valid[0], valid[-1])]
    assert last[0] < first[0], valid  # -log alpha[0][answer] goes down
    assert last[1] >= 80.0 and last[2] >= last[1] and last[3] >= 0.85, valid


def test_pair_classification_flattens_2n_cross_states(pretrained, tmp_path):
    rng = random.Random(1)
    data = tmp_path / "pairs"
    data.mkdir()
    for split, n in (("train", 60), ("dev", 20)):
        with open(data / f"{split}.tsv", "w") as f:
            f.write("id\tsentence1\tsentence2\tlabel\n")
            for k in range(n):
                label = rng.choice(["same", "other"])
                a = f"w{rng.randrange(9)} w{rng.randrange(9)}"
                f.write(f"{k}\t{a}\t{a if label == 'same' else 'w9 w9'}\t{label}\n")
    out = _finetune(data, pretrained, "cross_thought_pair_classification", "sentence_prediction_metrics",
                    tmp_path / "ft", "--text-columns", "1,2", "--label-column", 3, "--header", "--metrics",
                    "accuracy,f1", "--batch-size", 8, "--max-epoch", 2)
    assert "labels ['other', 'same']" in out and re.search(r"valid on 'valid' subset .*accuracy [0-9.]+ .*f1", out)
    assert "Linear(in_features=640, out_features=2" in out  # 2 sequences x 5 special tokens x 64


@pytest.mark.end_to_end  # a run at the paper's pool size
def test_answer_selection_runs_with_100_candidates_and_long_texts(pretrained, tmp_path):
    """The paper's pools: 100 candidates per question, some longer than
    --max-sequence-length (cut and counted, never dropped), encoded 32
    sequences at a time."""
    rng = random.Random(2)
    data = tmp_path / "qa100"
    data.mkdir()
    for split, n in (("train", 8), ("valid", 4)):
        with open(data / f"{split}.jsonl", "w") as f:
            for _ in range(n):
                candidates = [" ".join(f"w{rng.randrange(9)}" for _ in range(rng.choice((5, 20, 90))))
                              for _ in range(100)]
                example = {"question": "w1 w2", "candidates": candidates, "answer": rng.randrange(100)}
                f.write(json.dumps(example) + "\n")
    long_texts = sum(len(c.split()) > 64 for split in ("train", "valid")
                     for line in (data / f"{split}.jsonl").read_text().splitlines()
                     for c in json.loads(line)["candidates"])
    out = _finetune(data, pretrained, "cross_thought_answer_selection", "cross_thought_answer_selection",
                    tmp_path / "ft", "--recall-k", 10, "--max-sequence-length", 64, "--encoder-chunk-sequences", 32,
                    "--batch-size", 4, "--max-update", 2, save=True)
    assert "invalid sizes" not in out
    cut = [int(n.replace(",", "")) for n in re.findall(r"100 to 100 per question\) from .*?; ([0-9,]+) texts cut", out)]
    assert len(cut) == 2 and sum(cut) == long_texts > 0
    assert re.search(r"valid on 'valid' subset .*recall_at_1 [0-9.]+ \| recall_at_k [0-9.]+ \| mrr", out)
    assert re.search(r"num_updates 2\b", out)
    # the fine-tuned checkpoint gives embeddings with the pre-training corpus alone, its fine-tuning files gone
    from segatron_fairseq.models.cross_thought import CrossThoughtModel

    data.rename(tmp_path / "moved")
    hub = CrossThoughtModel.from_pretrained(str(tmp_path / "ft"), data_name_or_path=str(pretrained / "bin"))
    assert hub.encode(["w1 w2", "w3"]).shape[0] == 2


def test_pair_classification_cuts_each_text_and_drops_no_pair(pretrained, tmp_path):
    data = tmp_path / "long_pairs"
    data.mkdir()
    rng = random.Random(3)
    for split, n in (("train", 12), ("dev", 6)):
        with open(data / f"{split}.tsv", "w") as f:
            for k in range(n):
                a = " ".join(f"w{rng.randrange(9)}" for _ in range(150 if k % 2 else 10))
                f.write(f"{a}\t{a}\t{k % 2}\n")
    out = _finetune(data, pretrained, "cross_thought_pair_classification", "sentence_prediction_metrics",
                    tmp_path / "ft", "--text-columns", "0,1", "--label-column", 2, "--max-sequence-length", 100,
                    "--batch-size", 6, "--max-epoch", 1)
    assert "invalid sizes" not in out
    assert "train: 12 pairs from" in out and "; 12 texts cut to --max-sequence-length 100" in out
    assert "valid: 6 pairs from" in out and "; 6 texts cut" in out
    # every pair reached the model: the valid pass saw 6 sentences
    assert re.search(r"valid on 'valid' subset .*\| bsz 6\b", out), out[-2000:]


def _hub(pretrained):
    from segatron_fairseq.models.cross_thought import CrossThoughtModel

    return CrossThoughtModel.from_pretrained(str(pretrained / "ckpt"), "checkpoint_last.pt", str(pretrained / "bin"))


def test_hub_encode_and_rank_equal_the_answer_selection_forward(pretrained, tmp_path):
    from segatron_fairseq.tasks.cross_thought_answer_selection import (
        CrossThoughtAnswerSelectionConfig,
        CrossThoughtAnswerSelectionTask,
    )

    question = "where does the lobster live"
    candidates = ["The lobster lives near the coast of Norway .", "w1 w2 w3", "the fishery of Norway",
                  "Its shell grows in deep water , like its relative H. americanus ."]
    (tmp_path / "valid.jsonl").write_text(json.dumps({"question": question, "candidates": candidates,
                                                      "answer": 0}) + "\n")
    task = CrossThoughtAnswerSelectionTask.setup_task(
        CrossThoughtAnswerSelectionConfig(data=str(tmp_path), pretrain_data=str(pretrained / "bin")))
    task.load_dataset("valid")
    sample = task.datasets["valid"].collater([0])
    hub = _hub(pretrained)
    with torch.no_grad():
        _, extra = hub.model(**sample["net_input"], cross_only=True)
    embeddings = hub.encode([question] + candidates)
    assert embeddings.shape == (5, 5, 64)  # (n, N special tokens, d)
    torch.testing.assert_close(embeddings, extra["sequence_embeddings"][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(hub.rank(question, candidates), extra["cross_attention"][0, 0, 1:],
                               rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def rank_files(pretrained, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rank")
    passages = {f"p{k}": text for k, text in enumerate(
        ["w1 w2 w3", "The lobster lives near the reef .", "w4 w5", "The fishery of Norway .", "w6",
         "A female breeds in deep water .", "w7 w8 w1"])}
    with open(tmp / "passages.jsonl", "w") as f:
        for pid, text in passages.items():
            f.write(json.dumps({"id": pid, "text": text}) + "\n")
    questions = [
        {"id": "q1", "question": "where does the lobster live", "candidate_ids": ["p1", "p2", "p3", "p6"],
         "gold": ["p1", "p3"]},
        {"id": "q2", "question": "w1 w3", "candidate_ids": ["p0", "p4", "p5"], "gold": ["p0"]},
        {"id": "q3", "question": "the shell", "candidates": ["Its shell is blue .", "w2 w2", "The larva hides ."],
         "gold": [0]},
        {"id": "q4", "question": "w8"},  # every passage, no gold
    ]
    with open(tmp / "questions.jsonl", "w") as f:
        for q in questions:
            f.write(json.dumps(q) + "\n")
    args = ["--path", pretrained / "ckpt" / "checkpoint_last.pt", "--data", pretrained / "bin", "--passages",
            tmp / "passages.jsonl", "--questions", tmp / "questions.jsonl", "--embeddings", tmp / "cache.pt",
            "--output", tmp / "ranked.jsonl", "--overwrite", "--top-k", 10, "--recall-k", "1,2", "--cpu"]
    return tmp, passages, questions, args


def test_rank_command_ranks_each_questions_own_candidates(pretrained, rank_files):
    tmp, passages, questions, args = rank_files
    out = run_cli("cross-thought-rank", *args)
    assert "encoded 10 candidate texts" in out  # 7 passages and 3 texts of q3
    ranked = [json.loads(line) for line in (tmp / "ranked.jsonl").read_text().splitlines()]
    assert [r["question"] for r in ranked] == ["q1", "q2", "q3", "q4"]
    hub = _hub(pretrained)
    for q, r in zip(questions, ranked):
        ids = q.get("candidate_ids") or (list(range(len(q["candidates"]))) if "candidates" in q else list(passages))
        texts = q.get("candidates") or [passages[i] for i in ids]
        scores = hub.rank(q["question"], texts)
        assert sorted(p["passage"] for p in r["top_k"]) == sorted(ids)
        listed = [p["score"] for p in r["top_k"]]
        assert listed == sorted(listed, reverse=True)
        expected = dict(zip(ids, scores.tolist()))
        assert listed == pytest.approx([expected[p["passage"]] for p in r["top_k"]], abs=1e-5)
    # Recall@k and MRR by hand over the three questions with gold
    recall, reciprocal = {1: 0.0, 2: 0.0}, 0.0
    for q, r in zip(questions[:3], ranked[:3]):
        order = [p["passage"] for p in r["top_k"]]
        for k in recall:
            recall[k] += len(set(q["gold"]) & set(order[:k])) / len(q["gold"]) / 3
        reciprocal += 1 / (1 + min(order.index(g) for g in q["gold"])) / 3
    figures = dict(re.findall(r"(recall@\d|mrr) ([0-9.]+)", out))
    assert "3 questions with gold candidates" in out
    assert float(figures["recall@1"]) == pytest.approx(recall[1], abs=1e-4)
    assert float(figures["recall@2"]) == pytest.approx(recall[2], abs=1e-4)
    assert float(figures["mrr"]) == pytest.approx(reciprocal, abs=1e-4)


def test_rank_cache_is_reused_only_under_the_same_settings(rank_files):
    tmp, passages, questions, args = rank_files
    run_cli("cross-thought-rank", *args)
    assert "reusing 10 candidate embeddings" in run_cli("cross-thought-rank", *args)
    out = run_cli("cross-thought-rank", *args, "--max-length", 3)
    assert "computed with other settings (changed: max_length); recomputing" in out
    out = run_cli("cross-thought-rank", *args, "--model-overrides", "{'encoder_chunk_sequences': 2}")
    assert "(changed: max_length, model_overrides)" in out
    edited = tmp / "passages_edited.jsonl"
    edited.write_text((tmp / "passages.jsonl").read_text().replace("w4 w5", "w4 w5 w6"))
    out = run_cli("cross-thought-rank", *[edited if a == tmp / "passages.jsonl" else a for a in args])
    assert "(changed: texts, model_overrides)" in out and "encoded 10 candidate texts" in out


def test_rank_command_errors(pretrained, rank_files, tmp_path):
    tmp, passages, questions, args = rank_files
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "ok"}) + "\n" + json.dumps({"question": 5}) + "\n")
    out = run_cli("cross-thought-rank", *[bad if a == tmp / "questions.jsonl" else a for a in args], expect_ok=False)
    assert f"{bad}: line 2: 'question' is not a string (int)" in out
    bad.write_text(json.dumps({"question": "q", "candidates": ["a", ["b"]]}) + "\n")
    out = run_cli("cross-thought-rank", *[bad if a == tmp / "questions.jsonl" else a for a in args], expect_ok=False)
    assert f"{bad}: line 1: candidate 1 is not a string (list)" in out
    bad.write_text(json.dumps({"question": "q", "candidate_ids": ["p1", "p99"]}) + "\n")
    out = run_cli("cross-thought-rank", *[bad if a == tmp / "questions.jsonl" else a for a in args], expect_ok=False)
    assert "candidate id 'p99' is not in --passages" in out
    out = run_cli("cross-thought-rank", *args[:-3], "--top-k", 0, "--cpu", expect_ok=False)
    assert "--top-k: must be at least 1, not 0" in out

    # a dictionary of another corpus
    write_lines(tmp_path / "other.txt", [[("text", [[f"x{i}" for i in range(60)]])]])
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp_path / "other.txt",
            "--destdir", tmp_path / "other")
    out = run_cli("cross-thought-rank", *[tmp_path / "other" if a == pretrained / "bin" else a for a in args],
                  expect_ok=False)
    assert re.search(r"other/dict.txt has [0-9,]+ symbols \(with <mask>\) but .* embeds [0-9,]+: --data is not the "
                     r"corpus this model was trained on", out)

    # a checkpoint of another model
    fairseq_train(pretrained / "bin", task="segatron_lm", arch="segatron_xl_tiny", criterion="segatron_lm_loss",
                  save_dir=tmp_path / "xl", extra=["--batch-size", 2, "--tgt-len", 8, "--max-update", 1,
                                                   "--no-epoch-checkpoints", "--disable-validation"])
    xl = tmp_path / "xl" / "checkpoint_last.pt"
    out = run_cli("cross-thought-rank", *[xl if a == pretrained / "ckpt" / "checkpoint_last.pt" else a for a in args],
                  expect_ok=False)
    assert "this is a segatron_xl checkpoint; Cross-Thought embeddings and ranking need a cross_thought one" in out
