"""Cross-Thought fine-tuning and ranking: answer-selection loss and metrics, pair classification,
cross-thought-rank with cached passage embeddings."""
import json
import math
import random
import re

import pytest
import torch

from conftest import PLUGIN_DIR, run_cli
from corpus import make_documents, write_lines
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


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cross_thought")
    write_lines(tmp / "corpus.txt", make_documents(30, seed=31))
    run_cli("segatron-preprocess", "--input-format", "lines", "--trainpref", tmp / "corpus.txt",
            "--validpref", tmp / "corpus.txt", "--destdir", tmp / "bin")
    run_cli("fairseq-train", tmp / "bin", "--user-dir", PLUGIN_DIR, "--task", "cross_thought_mlm", "--arch",
            "cross_thought_tiny", "--criterion", "masked_lm", "--num-sequences", 4, "--sequence-length", 16,
            "--batch-size", 8, "--optimizer", "adam", "--lr", 1e-3, "--max-update", 10, "--save-dir",
            tmp / "ckpt", "--no-epoch-checkpoints", "--disable-validation", "--cpu")
    return tmp


FINETUNE = ["--user-dir", PLUGIN_DIR, "--arch", "cross_thought_tiny", "--reset-optimizer", "--reset-dataloader",
            "--reset-meters", "--reset-lr-scheduler", "--optimizer", "adam", "--lr", 1e-3, "--no-save",
            "--log-format", "simple", "--cpu", "--seed", 1]


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
    out = run_cli("fairseq-train", data, *FINETUNE, "--task", "cross_thought_answer_selection", "--pretrain-data",
                  pretrained / "bin", "--criterion", "cross_thought_answer_selection", "--recall-k", 2,
                  "--restore-file", pretrained / "ckpt" / "checkpoint_last.pt", "--batch-size", 16,
                  "--max-epoch", 10, "--save-dir", tmp_path / "ft")
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
    out = run_cli("fairseq-train", data, *FINETUNE, "--task", "cross_thought_pair_classification",
                  "--pretrain-data", pretrained / "bin", "--text-columns", "1,2", "--label-column", 3, "--header",
                  "--metrics", "accuracy,f1", "--criterion", "sentence_prediction_metrics", "--restore-file",
                  pretrained / "ckpt" / "checkpoint_last.pt", "--batch-size", 8, "--max-epoch", 2,
                  "--save-dir", tmp_path / "ft")
    assert "labels ['other', 'same']" in out and re.search(r"valid on 'valid' subset .*accuracy [0-9.]+ .*f1", out)
    assert "Linear(in_features=640, out_features=2" in out  # 2 sequences x 5 special tokens x 64


def test_rank_command_caches_embeddings_and_matches_the_model(pretrained, tmp_path):
    from fairseq import checkpoint_utils

    import segatron_fairseq  # noqa: F401

    passages = ["w1 w2 w3", "lobster lives near the reef", "w4 w5", "the fishery of Norway", "w6"]
    (tmp_path / "passages.txt").write_text("\n".join(passages) + "\n")
    (tmp_path / "questions.jsonl").write_text(json.dumps({"id": "q1", "text": "where does the lobster live"}) + "\n")
    args = ["--path", pretrained / "ckpt" / "checkpoint_last.pt", "--data", pretrained / "bin", "--passages",
            tmp_path / "passages.txt", "--questions", tmp_path / "questions.jsonl", "--embeddings",
            tmp_path / "passages.pt", "--output", tmp_path / "ranked.jsonl", "--top-k", 3, "--cpu"]
    assert "encoded 5 passages" in run_cli("cross-thought-rank", *args)
    assert "reusing 5 passage embeddings" in run_cli("cross-thought-rank", *args)
    ranked = [json.loads(line) for line in (tmp_path / "ranked.jsonl").read_text().splitlines()]
    assert len(ranked) == 1 and ranked[0]["question"] == "q1" and len(ranked[0]["top_k"]) == 3

    # the same scores from the model's forward pass over [question; all passages]
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(pretrained / "ckpt" / "checkpoint_last.pt")], arg_overrides={"data": str(pretrained / "bin")})
    model = models[0].eval()
    d = task.dictionary
    texts = ["where does the lobster live"] + passages
    length = max(len(t.split()) for t in texts)
    tokens = torch.full((1, len(texts), length), d.pad())
    for m, text in enumerate(texts):
        tokens[0, m, : len(text.split())] = torch.tensor([d.index(w) for w in text.split()])
    with torch.no_grad():
        alpha = model(tokens, cross_only=True)[1]["cross_attention"][0, 0, 1:]
    expected = alpha.topk(3)
    assert [p["passage"] for p in ranked[0]["top_k"]] == expected.indices.tolist()
    assert [p["score"] for p in ranked[0]["top_k"]] == pytest.approx(expected.values.tolist(), abs=1e-5)
