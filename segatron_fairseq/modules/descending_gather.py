"""``torch.gather`` along the last dimension for an index that never increases along it.

Segatron's (sentence, paragraph) distance index (B, T, K) does not increase from
one key to the next: a key further right is no more sentences or paragraphs away
from the query. So the keys that read grid cell g form one run, [start_g, stop_g).
The backward of ``torch.gather`` is a scatter-add whose atomic adds pile up on
the few cells of each row; here the gradient of cell g is the sum of its run,
read off a cumulative sum (at least float32) at the run's two ends.
"""
from typing import Tuple

import torch
from torch import Tensor


def run_bounds(index: Tensor, cells: int) -> Tuple[Tensor, Tensor]:
    """index (B, T, K), non-increasing along K, values in [0, cells) ->
    (start, stop), each (B, T, cells): cell g is read by keys start_g <= j < stop_g
    (start_g == stop_g when no key reads it)."""
    keys = index.size(-1)
    ascending = index.flip(-1).contiguous()
    values = torch.arange(cells, device=index.device, dtype=index.dtype).expand(*index.shape[:-1], cells).contiguous()
    start = keys - torch.searchsorted(ascending, values, right=True)  # keys with index > g
    stop = keys - torch.searchsorted(ascending, values, right=False)  # keys with index >= g
    return start, stop


class _DescendingGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grid: Tensor, index: Tensor, start: Tensor, stop: Tensor) -> Tensor:
        batch, heads, queries, _ = grid.shape
        ctx.save_for_backward(start, stop)
        return grid.gather(-1, index[:, None].expand(batch, heads, queries, index.size(-1)))

    @staticmethod
    def backward(ctx, grad: Tensor):
        start, stop = ctx.saved_tensors
        batch, heads, queries, _ = grad.shape
        accumulate = torch.promote_types(grad.dtype, torch.float32)
        cumulative = grad.to(accumulate).cumsum(-1)  # (B, H, T, K): sums of the first j+1 keys
        shape = (batch, heads, queries, start.size(-1))

        def sum_of_first(count: Tensor) -> Tensor:  # count (B, T, G) -> (B, H, T, G)
            total = cumulative.gather(-1, (count - 1).clamp(min=0)[:, None].expand(shape))
            return total.masked_fill((count == 0)[:, None], 0)

        grad_grid = sum_of_first(stop) - sum_of_first(start)
        return grad_grid.to(grad.dtype), None, None, None


def descending_gather(grid: Tensor, index: Tensor, start: Tensor, stop: Tensor) -> Tensor:
    """grid (B, H, T, G), index (B, T, K) with ``run_bounds(index, G)`` = (start, stop)
    -> (B, H, T, K): out[b, h, i, j] = grid[b, h, i, index[b, i, j]]."""
    return _DescendingGather.apply(grid, index, start, stop)
