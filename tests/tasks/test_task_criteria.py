"""A task whose samples only its own criterion reads refuses another one when fairseq-train builds it (before,
--task extractive_qa with another criterion ended in a torch shape error)."""
import json

import pytest
from conftest import fairseq_train
from omegaconf import OmegaConf

from segatron_fairseq.tasks.cross_thought_answer_selection import CrossThoughtAnswerSelectionTask
from segatron_fairseq.tasks.extractive_qa import ExtractiveQATask
from segatron_fairseq.tasks.indexed_sentence_prediction import IndexedSentencePredictionTask
from segatron_fairseq.tasks.multiple_choice_qa import MultipleChoiceQATask
from segatron_fairseq.tasks.segatron_lm import SegatronLMTask
from segatron_fairseq.tasks.siamese_nli import SiameseNLITask

OWN_CRITERION = {ExtractiveQATask: "extractive_qa", MultipleChoiceQATask: "multiple_choice_qa",
                 SiameseNLITask: "siamese_nli",
                 CrossThoughtAnswerSelectionTask: "cross_thought_answer_selection"}


@pytest.mark.parametrize("task_class", OWN_CRITERION, ids=lambda c: c.__name__)
def test_a_task_names_its_criterion(task_class):
    assert task_class.CRITERION == OWN_CRITERION[task_class]
    task = task_class.__new__(task_class)  # build_criterion reads only the task's name
    task.cfg = OmegaConf.create({"_name": "the_task"})
    with pytest.raises(ValueError, match=f"^--task the_task needs --criterion {OWN_CRITERION[task_class]}, "
                                         "not cross_entropy$"):
        task.build_criterion(OmegaConf.create({"_name": "cross_entropy"}))


def test_tasks_that_share_criteria_name_none():
    assert IndexedSentencePredictionTask.CRITERION is None and SegatronLMTask.CRITERION is None


def test_fairseq_train_squad_with_another_criterion(tmp_path, segabert_corpus):
    from test_reading_comprehension import SQUAD

    (tmp_path / "squad").mkdir()
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        (tmp_path / "squad" / name).write_text(json.dumps(SQUAD))
    out = fairseq_train(tmp_path / "squad", task="extractive_qa", arch="segabert_tiny", criterion="cross_entropy",
                        save_dir=tmp_path / "ft", expect_ok=False,
                        extra=["--squad-v2", "--pretrain-data", segabert_corpus, "--max-positions", 32,
                               "--doc-stride", 8, "--batch-size", 4, "--max-update", 1])
    assert "ValueError: --task extractive_qa needs --criterion extractive_qa, not cross_entropy" in out
    assert not (tmp_path / "ft").exists() or not any((tmp_path / "ft").iterdir())
