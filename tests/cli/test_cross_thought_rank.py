"""cross-thought-rank never replaces a file that is not its own embedding cache, and refuses an --output it
cannot write before any work."""
import pytest
from conftest import run_cli


@pytest.fixture
def rank_args(cross_thought_trained, tmp_path):
    (tmp_path / "passages.txt").write_text("w1 w2 w3\nThe lobster lives near the reef .\nw4 w5\n")
    (tmp_path / "questions.txt").write_text("where does the lobster live\n")
    checkpoint = cross_thought_trained / "ckpt" / "checkpoint_last.pt"
    return ["--path", checkpoint, "--data", cross_thought_trained / "bin", "--passages", tmp_path / "passages.txt",
            "--questions", tmp_path / "questions.txt", "--cpu"]


def refused(args, expect):
    out = run_cli("cross-thought-rank", *args, expect_ok=False)
    assert expect in out, out[-2000:]
    assert "Traceback" not in out and "encoded" not in out, out[-3000:]  # refused before any work
    return out


def test_an_existing_file_that_is_not_its_cache_is_never_replaced(rank_args, cross_thought_trained, tmp_path):
    precious = tmp_path / "checkpoint_copy.pt"
    precious.write_bytes((cross_thought_trained / "ckpt" / "checkpoint_last.pt").read_bytes())
    before = precious.read_bytes()
    output = tmp_path / "ranked.jsonl"
    refused([*rank_args, "--embeddings", precious, "--output", output],
            expect=f"cross-thought-rank: error: {precious}: --embeddings is an existing file that is not an "
                   f"embedding cache of cross-thought-rank")
    assert precious.read_bytes() == before and not output.exists()
    (tmp_path / "notes.pt").write_text("my notes\n")
    refused([*rank_args, "--embeddings", tmp_path / "notes.pt", "--output", output], expect="not an embedding cache")
    assert (tmp_path / "notes.pt").read_text() == "my notes\n"
    refused([*rank_args, "--embeddings", tmp_path, "--output", output], expect="--embeddings is a directory")

    # its own cache is reused, and replaced when the settings change
    cache = tmp_path / "cache.pt"
    assert "encoded 3 candidate texts" in run_cli("cross-thought-rank", *rank_args, "--embeddings", cache,
                                                  "--output", output)
    first = cache.read_bytes()
    assert "reusing 3 candidate embeddings" in run_cli("cross-thought-rank", *rank_args, "--embeddings", cache,
                                                       "--output", output, "--overwrite")
    out = run_cli("cross-thought-rank", *rank_args, "--embeddings", cache, "--output", output, "--max-length", 3,
                  "--overwrite")
    assert "changed: max_length" in out and cache.read_bytes() != first


def test_an_output_it_cannot_write_is_refused_before_the_work(rank_args, tmp_path):
    cache = tmp_path / "cache.pt"
    (tmp_path / "out").mkdir()
    refused([*rank_args, "--embeddings", cache, "--output", tmp_path / "out"],
            expect=f"cross-thought-rank: error: {tmp_path / 'out'}: --output is a directory")
    (tmp_path / "notes.txt").write_text("my notes\n")
    refused([*rank_args, "--embeddings", cache, "--output", tmp_path / "notes.txt" / "ranked.jsonl"],
            expect=f"--output is inside {tmp_path / 'notes.txt'}, which is not a directory")
    refused([*rank_args, "--embeddings", cache, "--output", tmp_path / "notes.txt"],
            expect=f"{tmp_path / 'notes.txt'}: --output exists; pass --overwrite to replace it")
    questions = (tmp_path / "questions.txt").read_text()
    refused([*rank_args, "--embeddings", cache, "--output", tmp_path / "questions.txt", "--overwrite"],
            expect="--output is the same file as --questions")
    refused([*rank_args, "--embeddings", tmp_path / "questions.txt", "--output", tmp_path / "ranked.jsonl"],
            expect="--embeddings is the same file as --questions")
    assert (tmp_path / "questions.txt").read_text() == questions
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"
    assert not cache.exists() and not (tmp_path / "ranked.jsonl").exists()
