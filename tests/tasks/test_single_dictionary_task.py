"""What every task of the plugin reads first: the corpus's dictionary, and the refusal of a --data that is not a
segatron-preprocess directory, one message naming the path and what it is."""
import pytest

from segatron_fairseq.tasks.single_dictionary_task import load_corpus_dictionary


def test_a_corpus_dictionary_with_appended_symbols(tmp_path):
    (tmp_path / "dict.txt").write_text("the 5\nof 3\n")
    dictionary = load_corpus_dictionary(str(tmp_path), "--data", "<mask>")
    assert [dictionary[i] for i in range(dictionary.nspecial, len(dictionary))] == ["the", "of", "<mask>"]


def test_data_that_is_not_a_corpus_directory_is_named_with_what_it_is(tmp_path):
    (tmp_path / "train.txt").write_text("some text\n")
    (tmp_path / "empty").mkdir()
    cases = {tmp_path / "missing": f"{tmp_path / 'missing'}: no such directory",
             tmp_path / "train.txt": f"{tmp_path / 'train.txt'}: a file, not a directory",
             tmp_path / "empty": f"{tmp_path / 'empty' / 'dict.txt'} not found"}
    for data, problem in cases.items():
        with pytest.raises(FileNotFoundError) as refused:
            load_corpus_dictionary(str(data), "the data of --task segatron_lm")
        assert str(refused.value) == (f"{problem}: the data of --task segatron_lm must be a segatron-preprocess "
                                      "directory")
