"""SegmentMemory: the module's worked example, the reuse part, the modes and a change of batch size."""
import torch

from segatron_fairseq.modules.segment_memory import SegmentMemory


def _window(tokens, starts):
    """One row: layer inputs (T, 1, 1) holding the token numbers, and sentence start flags (1, T)."""
    return [torch.tensor(tokens, dtype=torch.float).view(-1, 1, 1)], {"sentence": torch.tensor([starts])}


def test_the_worked_example_counters_go_on_from_the_cached_tokens():
    memory = SegmentMemory("test")
    inputs, starts = _window([1, 2, 3, 4, 5], [False, False, True, False, False])
    counters = SegmentMemory.counters(starts, None)
    assert counters["sentence"].tolist() == [[0, 0, 1, 1, 1]]
    memory.update(True, inputs, counters, None, mem_len=4)
    cached = memory.current(True, batch=1)
    assert cached.hidden[0].view(-1).tolist() == [2, 3, 4, 5] and cached.counters["sentence"].tolist() == [[0, 1, 1, 1]]
    assert cached.last["sentence"].tolist() == [1]
    inputs, starts = _window([6, 7, 8], [False, True, False])
    assert SegmentMemory.counters(starts, cached)["sentence"].tolist() == [[1, 2, 2]]
    memory.update(True, inputs, SegmentMemory.counters(starts, cached), cached, mem_len=4)
    assert memory.get(True).hidden[0].view(-1).tolist() == [5, 6, 7, 8]


def test_keep_caches_the_reuse_part_only_and_modes_and_batch_sizes_are_apart():
    memory = SegmentMemory("test")
    inputs, starts = _window([1, 2, 3, 4], [False, True, False, True])
    memory.update(False, inputs, SegmentMemory.counters(starts, None), None, mem_len=8, keep=2)
    cached = memory.get(False)
    assert cached.hidden[0].view(-1).tolist() == [1, 2] and cached.last["sentence"].tolist() == [1]
    assert memory.get(True) is None  # training never sees the evaluation stream's memory
    assert memory.current(False, batch=3) is None  # another batch size starts afresh
    memory.update(False, inputs, SegmentMemory.counters(starts, None), None, mem_len=0)
    assert memory.get(False) is cached  # mem_len 0 caches nothing
    memory.reset(False)
    assert memory.get(False) is None
