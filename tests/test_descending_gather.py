"""descending_gather: the same values and gradients as torch.gather."""
import pytest
import torch

from segatron_fairseq.modules.descending_gather import descending_gather, run_bounds


def descending_index(batch, queries, keys, cells, generator):
    """Random non-increasing rows, each skipping some cells (empty runs)."""
    steps = torch.rand(batch, queries, keys, generator=generator) < 0.3
    index = (steps.flip(-1).long().cumsum(-1)).flip(-1)  # non-increasing, ends at 0 or 1
    return index.clamp(max=cells - 1)


@pytest.mark.parametrize("cells", [1, 4, 40])
def test_values_and_gradient_equal_torch_gather(cells):
    g = torch.Generator().manual_seed(0)
    batch, heads, queries, keys = 2, 3, 5, 23
    index = descending_index(batch, queries, keys, cells, g)
    assert (index[..., 1:] <= index[..., :-1]).all()
    grid = torch.randn(batch, heads, queries, cells, generator=g, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(batch, heads, queries, keys, generator=g, dtype=torch.float64)

    expected = grid.gather(-1, index[:, None].expand(batch, heads, queries, keys))
    (expected_grad,) = torch.autograd.grad((expected * upstream).sum(), grid)
    out = descending_gather(grid, index, *run_bounds(index, cells))
    (grad,) = torch.autograd.grad((out * upstream).sum(), grid)

    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    torch.testing.assert_close(grad, expected_grad, rtol=0, atol=1e-12)


def test_run_bounds_by_hand():
    index = torch.tensor([[[3, 3, 1, 1, 1, 0]]])
    start, stop = run_bounds(index, 4)
    assert start.tolist() == [[[5, 2, 2, 0]]]
    assert stop.tolist() == [[[6, 5, 2, 2]]]  # cell 2 is empty
