"""How much memory a forward pass leaves for its backward pass.

    with SavedTensorBytes() as saved:
        loss = model(sample)
    saved.bytes  # what autograd holds until backward, each storage counted once

This is what a training step keeps on the accelerator above the weights,
gradients and optimizer state, and it can be counted on any device (the
benchmarks count it on the CPU with the model cast to bf16). Tensors saved
inside an activation-checkpointed region are not held, so they do not count.
"""
import torch


class SavedTensorBytes(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self):
        self.storages = {}
        super().__init__(self._pack, lambda tensor: tensor)

    def __enter__(self):
        super().__enter__()
        return self

    def _pack(self, tensor):
        storage = tensor.untyped_storage()  # a storage saved by several operations, or as views, is held once
        self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())
