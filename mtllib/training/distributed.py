"""Data-parallel training under a launcher, with accelerate: what :func:`mtllib.training.trainer.train` needs.

The trainer runs unchanged on one device or on several. Started by a launcher that sets ``WORLD_SIZE`` > 1
(``torchrun --nproc_per_node N script.py``, or ``accelerate launch`` on GPUs), :func:`context` builds an
:class:`accelerate.Accelerator` (gloo on CPU, NCCL on CUDA; one device per process) and the trainer then

- splits every step's batch across the processes (``members[rank::world]``), so the *global* batch, the task
  schedule and the learning-rate schedule are those of a single-process run with the same ``batch_size``;
- scales each process's loss by its share of the batch, so the gradients DDP averages equal the gradient of
  the single-process loss (exactly for per-example losses; for token-level losses the mean is taken per
  process, a small difference on uneven shards);
- evaluates on the main process and broadcasts the scores (every process keeps the same best epoch), and
  computes IAT's head masks once (on the main process) for all;
- writes checkpoints from the main process only, with every process's RNG state, and resumes only with the
  same number of processes.

Without a launcher (``WORLD_SIZE`` unset or 1) nothing here is imported by the training loop's single-device
path, and accelerate is not imported at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from mtllib import checks


def launched_world_size() -> int:
    """The number of processes a launcher started (``WORLD_SIZE``; 1 without a launcher)."""
    value = os.environ.get("WORLD_SIZE", "1")
    try:
        size = int(value)
    except ValueError:
        raise checks.BadInput(f"WORLD_SIZE must be a positive integer, got {value!r}") from None
    if size < 1:
        raise checks.BadInput(f"WORLD_SIZE must be a positive integer, got {value!r}")
    return size


@dataclass
class Context:
    """One process of a data-parallel run (``accelerator`` is None for a single process)."""

    accelerator: object | None = None
    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def shard(self, members: list) -> tuple[list, float]:
        """This process's part of a global batch and the factor that makes DDP's mean of the processes'
        gradients the gradient of the whole batch's mean loss: ``len(part) * world / len(members)``. A process
        whose part would be empty (a batch smaller than the world) runs one example with factor 0."""
        if not self.distributed:
            return members, 1.0
        part = members[self.rank :: self.world_size]
        if not part:
            return members[:1], 0.0
        return part, len(part) * self.world_size / len(members)

    def mean_loss(self, loss: torch.Tensor, factor: float) -> float:
        """The whole batch's mean loss (what a single process would log) from each process's scaled loss."""
        if not self.distributed:
            return float(loss.detach())
        value = (loss.detach() * factor).reshape(1)
        return float(self.accelerator.reduce(value, reduction="mean"))

    def broadcast(self, obj):
        """``obj`` as the main process has it, on every process."""
        if not self.distributed:
            return obj
        from accelerate.utils import broadcast_object_list

        return broadcast_object_list([obj], from_process=0)[0]

    def gather(self, obj) -> list:
        """``[obj of process 0, obj of process 1, ...]`` on every process."""
        if not self.distributed:
            return [obj]
        from accelerate.utils import gather_object

        return gather_object([obj])

    def barrier(self) -> None:
        if self.distributed:
            self.accelerator.wait_for_everyone()


def context(device: torch.device) -> Context:
    """The data-parallel context of this process: a single process unless a launcher started several.

    ``device`` is what the run asked for (:func:`mtllib.runtime.pick_device`): CPU processes communicate over
    gloo; CUDA processes each take one GPU (``LOCAL_RANK``) and communicate over NCCL. More processes on this
    machine than it has GPUs is a :class:`mtllib.checks.BadInput`, raised before any training."""
    world = launched_world_size()
    if world == 1:
        return Context()
    if device.type == "cuda":
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        count = torch.cuda.device_count()
        if local > count:
            raise checks.BadInput(f"{local} processes were launched on this machine but it has {count} CUDA device(s): launch at most {count} (one per GPU)")
    elif device.type != "cpu":
        raise checks.BadInput(f"data-parallel training runs on CPU or CUDA, not {device.type!r}")
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    # a homogeneous batch uses one task's head: the other heads get no gradient on any process
    accelerator = Accelerator(cpu=device.type == "cpu", kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    return Context(accelerator, accelerator.process_index, accelerator.num_processes)
