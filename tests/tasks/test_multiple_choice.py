"""RACE: the official directory reader, the option layout computed by hand,
and fine-tuning through fairseq-train with accuracy for middle, high and all."""
import json
import re

import pytest
from conftest import fairseq_train, pretrained_kind, quick_first

from segatron_fairseq.data.multiple_choice_dataset import option_layout
from segatron_fairseq.data.race import read_race
from segatron_fairseq.data.span_windows import tokenize_context
from segatron_fairseq.segments import TABLE_SIZES
from segatron_preprocess import sentences, subwords

TRAIN_TEXT = "The crab lives near the reef . It hides under a ledge . Dr. Jones counted the crabs . " * 40

MIDDLE = {"id": "middle1.txt", "article": "Tom has a red ball . He plays in the park .\nHis sister has a cat .",
          "questions": ["What colour is the ball ?", "Tom plays in the _ ."],
          "options": [["red", "blue", "green", "black"], ["house", "school", "park", "shop"]],
          "answers": ["A", "C"]}
HIGH = {"id": "high7.txt", "article": "The reef is far away . Crabs live there .",
        "questions": ["Who lives at the reef ?"], "options": [["fish", "crabs", "birds", "cats"]], "answers": ["B"]}


def write_race(root, split="dev"):
    for level, record in (("middle", MIDDLE), ("high", HIGH)):
        (root / split / level).mkdir(parents=True, exist_ok=True)
        (root / split / level / record["id"]).write_text(json.dumps(record))


def test_race_reader(tmp_path):
    write_race(tmp_path)
    first, cloze, high = read_race(str(tmp_path / "dev"))
    assert (first.level, first.answer, first.options[0]) == ("middle", 0, "red")
    assert cloze.question == "Tom plays in the _ ." and cloze.answer == 2
    assert high.level == "high" and high.answer == 1
    broken = dict(HIGH, answers=["E"])
    (tmp_path / "dev" / "high" / "high7.txt").write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"high7.txt: question 1: needs 4 options and an answer in A-D"):
        read_race(str(tmp_path / "dev"))
    with pytest.raises(FileNotFoundError, match="no RACE files"):
        read_race(str(tmp_path / "test"))


def test_option_layout_by_hand():
    splitter = sentences.load_params(sentences.train([TRAIN_TEXT], 1 << 20))
    vocabulary = {}

    def index(symbol):
        return vocabulary.setdefault(symbol, len(vocabulary) + 10)

    article = tokenize_context("A b . C d .", subwords.Words().encode, index, splitter, first_paragraph=1)
    query = [[index("who"), index("?")], [index("Al")]]
    tokens, paragraph, sentence, token, token_type = option_layout(query, article, 0, 2, 64, TABLE_SIZES)
    assert tokens[0] == 0 and tokens[4] == 2 and tokens[-1] == 2 and len(tokens) == 12
    assert paragraph == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert sentence == [0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1]
    assert token == [0, 0, 1, 0, 0, 0, 1, 2, 0, 1, 2, 2]
    assert token_type == [0] * 5 + [1] * 7
    cut = option_layout(query, article, 0, 2, 9, TABLE_SIZES)[0]
    assert len(cut) == 9 and cut[-1] == 2  # the article loses its end


@pytest.mark.parametrize("kind", quick_first("segabert", "bert", "albert", "electra", "xlnet"))
def test_race_finetuning_reports_each_level(tmp_path, kind, request, segabert_corpus):
    arch, options, checkpoint = pretrained_kind(request, kind)
    race = tmp_path / "RACE"
    write_race(race, "train")
    write_race(race, "dev")
    out = fairseq_train(race, task="multiple_choice_qa", arch=arch, criterion="multiple_choice_qa",
                        save_dir=tmp_path / "ft",
                        extra=[*options, "--pretrain-data", segabert_corpus, "--restore-file", checkpoint,
                               "--reset-optimizer",
                               "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler", "--batch-size", 2,
                               "--max-update", 2, "--max-positions", 32, "--no-save", "--log-format", "simple"])
    assert "valid: 3 questions" in out and "middle 2, high 1" in out
    valid = re.findall(r"valid on 'valid' subset .*? accuracy ([0-9.]+) \| accuracy_high ([0-9.]+) \| "
                       r"accuracy_middle ([0-9.]+)", out)
    accuracy, high, middle = map(float, valid[-1])
    assert high in (0.0, 100.0) and middle in (0.0, 50.0, 100.0)
    assert accuracy == pytest.approx((high * 1 + middle * 2) / 3, abs=0.01)
