"""Data-parallel training across processes with PyTorch's own engine (``torchrun`` + ``DistributedDataParallel``).

``torchrun --nproc_per_node=N -m llmviz train …`` starts N copies of the command line; each one calls
:func:`join` and finds out from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``/``MASTER_PORT``) where it sits. Every process draws the same global batch of windows (the batch
generator is seeded identically on every rank) and trains on its own slice of it; DDP averages the gradients, so
one optimizer step equals one step of a single process on the whole batch. With ``micro_batch_size`` the slice is
split further and the gradients are accumulated, so the global batch stays the same whatever N is:

>>> rows = torch.arange(16)
>>> ProcessGroup(rank=1, world_size=2).shard(rows).tolist()  # rank 1 of 2 takes the second half
[8, 9, 10, 11, 12, 13, 14, 15]
>>> [chunk.tolist() for chunk in micro_batches(rows[:8], micro_batch_size=4)]
[[0, 1, 2, 3], [4, 5, 6, 7]]
>>> accumulation_steps(batch_size=16, world_size=2, micro_batch_size=4)
2

NCCL is used on CUDA and gloo on CPU. Only rank 0 logs, evaluates and writes checkpoints; a checkpoint holds the
global batch generator's state, so a run resumes on a different number of processes.

``--fsdp`` (``fully_sharded``) shards the GPT with PyTorch's FSDP2 (``torch.distributed.fsdp.fully_shard``) instead
of copying it: every block, then the rest of the model, is split over the processes, so each one keeps 1/N of the
parameters, of the gradients and of the optimizer states (ZeRO stage 3). A block's weights are gathered just for its
forward and backward pass, and the gradients are reduce-scattered (averaged) instead of all-reduced, so a step is
still the same step as one process on the whole batch. Evaluation runs on every process (each forward pass gathers
weights from all of them), and the full weights are gathered onto rank 0 before it saves.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn

from llmviz.errors import ConfigError


@dataclass(frozen=True)
class ProcessGroup:
    """Where this process sits in a data-parallel job: rank ``rank`` of ``world_size`` (one process: 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    fully_sharded: bool = False  # FSDP2: parameters, gradients and optimizer states sharded over the processes

    def __post_init__(self):
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ConfigError(f"rank {self.rank} does not fit a world of {self.world_size} processes")

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def sharded(self) -> bool:
        """Across processes with FSDP (one process never shards: there is nobody to share with)."""
        return self.fully_sharded and self.distributed

    @property
    def is_main(self) -> bool:
        """Rank 0: the one process that logs, evaluates and writes files."""
        return self.rank == 0

    def shard(self, batch: torch.Tensor) -> torch.Tensor:
        """This rank's contiguous slice of a global batch (rows), the same size on every rank."""
        if batch.shape[0] % self.world_size:
            raise ConfigError(
                f"A batch of {batch.shape[0]} windows cannot be split evenly over {self.world_size} processes: "
                f"choose a batch size that is a multiple of {self.world_size}."
            )
        per_rank = batch.shape[0] // self.world_size
        return batch[self.rank * per_rank : (self.rank + 1) * per_rank]  # (B / world_size, ...)

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over all ranks (every rank gets it); the value itself in one process."""
        if not self.distributed:
            return value
        value = value.detach().clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
        return value / self.world_size

    def wrap(self, model: nn.Module) -> nn.Module:
        """The model to train: wrapped in DistributedDataParallel across processes, unchanged in one.

        With ``fully_sharded`` the model is sharded in place with FSDP2 (each block, then the root: the
        embeddings, the final norm and the head) and returned; build its optimizer afterwards, on the
        sharded parameters.
        """
        if not self.distributed:
            return model
        device = next(model.parameters()).device
        if self.fully_sharded:
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.fsdp import fully_shard

            blocks = getattr(model, "blocks", None)
            if not isinstance(blocks, nn.ModuleList):
                raise ConfigError(
                    "FSDP shards a transformer block by block; this model has no blocks: train it without --fsdp."
                )
            # a block also returns its keys and values (what a KV cache keeps): views of the qkv projection, which
            # training throws away and nothing changes in place, so FSDP's warning about returned views is moot
            warnings.filterwarnings("ignore", message=r"FSDP2-wrapped module \(FSDPBlock\) returned a view tensor")
            mesh = init_device_mesh(device.type, (self.world_size,))
            for block in blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
            return model
        device_ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()


def accumulation_steps(batch_size: int, world_size: int, micro_batch_size: int | None) -> int:
    """How many micro-batches each process adds up per step so that the global batch is ``batch_size``.

    >>> accumulation_steps(16, 1, None), accumulation_steps(16, 1, 8), accumulation_steps(16, 4, 8)
    (1, 2, 1)
    """
    if batch_size % world_size:
        raise ConfigError(
            f"The batch size ({batch_size}) must be a multiple of the number of processes ({world_size})."
        )
    per_rank = batch_size // world_size
    micro = min(micro_batch_size or per_rank, per_rank)
    if micro < 1 or per_rank % micro:
        raise ConfigError(
            f"Each of the {world_size} processes trains on {per_rank} windows per step; the micro-batch "
            f"({micro_batch_size}) must divide that number."
        )
    return per_rank // micro


def micro_batches(batch: torch.Tensor, micro_batch_size: int) -> list[torch.Tensor]:
    """Split one process's rows into equal micro-batches for gradient accumulation."""
    return list(torch.split(batch, micro_batch_size))


def join(device: str, fully_sharded: bool = False) -> tuple[ProcessGroup, str]:
    """Join the job torchrun started (NCCL on CUDA, gloo on CPU); one process when not under torchrun.

    ``fully_sharded``: shard the model with FSDP2 instead of copying it with DDP (see :meth:`ProcessGroup.wrap`).

    Returns the process group and the device this process trains on (``cuda:LOCAL_RANK`` on CUDA).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return ProcessGroup(), device
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        if torch.cuda.device_count() <= local_rank:
            raise ConfigError(
                f"Process {rank} wants GPU {local_rank}, but this machine has {torch.cuda.device_count()}: start "
                "torchrun with --nproc_per_node at most the number of GPUs."
            )
        torch.cuda.set_device(local_rank)
        device, backend = f"cuda:{local_rank}", "nccl"
    else:
        device, backend = "cpu", "gloo"  # MPS has no collective backend: several processes train on CPU
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return ProcessGroup(rank=rank, world_size=world_size, local_rank=local_rank, fully_sharded=fully_sharded), device


def leave(group: ProcessGroup) -> None:
    """Leave the job (call once at the end of every process).

    Every process waits at a barrier first: with FSDP, rank 0 still gathers and saves the whole model while the
    others are done, and a process that tore its group down meanwhile could abort (gloo) when the last
    collective's connections closed under it."""
    if group.distributed and dist.is_initialized():
        try:
            dist.barrier()
        finally:
            dist.destroy_process_group()


def finish(group: ProcessGroup, code: int) -> None:
    """End a rank of a distributed job that trained to the end: every process meets at a barrier (rank 0 has saved),
    then exits at once with ``code``, its output flushed; one process alone just returns.

    The interpreter's own teardown is skipped on purpose: FSDP's device mesh keeps the gloo process group alive until
    the interpreter frees it while shutting down, and gloo's threads destroyed in that order aborted a rank
    ("terminate called without an active exception", SIGABRT) in a CI run on a loaded 2-core machine, after every
    step and the save had succeeded, with the barrier of :func:`leave` in place. Nothing is left to do once the job
    is done."""
    if not group.distributed or not dist.is_initialized():
        return
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
