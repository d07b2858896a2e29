"""The processes a pre-training run spans: one, or a torchrun group (rank, world size, device), and what they share.

`join_world` reads torchrun's environment variables (never writes them) and starts the process group when this call
is the first to need it (gloo on CPU, NCCL on CUDA); `leave_world` tears down only a group it started. `barrier`,
`sum_over_processes` and `data_parallel` are no-ops (or the plain module) in a one-process world.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class World:
    """The processes this run spans, as seen from this one."""

    rank: int
    size: int
    device: torch.device
    started_here: bool  # this call initialised the process group (and tears it down)

    @property
    def main(self) -> bool:
        """The process that writes files (rank 0)."""
        return self.rank == 0


def join_world() -> World:
    """One process, or the torchrun process group (read from its environment variables, never written)."""
    import torch
    import torch.distributed as dist

    size = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = torch.cuda.is_available()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    if size <= 1:
        return World(0, 1, device, False)
    started = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
        started = True
    if cuda:
        torch.cuda.set_device(device)
    return World(dist.get_rank(), dist.get_world_size(), device, started)


def leave_world(world: World, finished: bool = True) -> None:
    """Tear down the process group if `join_world` started it.

    After a finished run every process first waits for the others through the rendezvous store (TCP, outside the
    group's own connections), so that none tears its connections down while another may still wait on its last
    message (a two-process run hung once in CI after one process had finished). After a failure the group is left to
    the process's exit, since tearing it down while another process waits in a collective can hang too."""
    if not world.started_here or not finished:
        return
    import torch.distributed as dist

    _wait_for_others(world)
    dist.destroy_process_group()


def _wait_for_others(world: World, timeout: float = 60.0) -> None:
    """Return once every process of the world has called this (or after `timeout` seconds, or at once if the store
    is gone): a count in the default store, which torchrun's agent keeps."""
    import time

    from torch.distributed import distributed_c10d

    key = "bertlens/leave_world"
    try:
        store = distributed_c10d._get_default_store()
        store.add(key, 1)
        deadline = time.monotonic() + timeout
        while store.add(key, 0) < world.size and time.monotonic() < deadline:
            time.sleep(0.01)
    except (RuntimeError, ValueError):  # no default store, or its host has gone: nothing left to wait for
        return


def barrier(world: World) -> None:
    """Wait until every process of the world gets here."""
    if world.size > 1:
        import torch.distributed as dist

        dist.barrier()


def sum_over_processes(value: torch.Tensor, world: World) -> None:
    """Replace `value` (in place) by its sum over all processes."""
    if world.size > 1:
        import torch.distributed as dist

        dist.all_reduce(value)


def data_parallel(module: torch.nn.Module, world: World) -> torch.nn.Module:
    """`module` wrapped in DistributedDataParallel under torchrun (its gradients averaged over processes)."""
    if world.size <= 1:
        return module
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(module, device_ids=[world.device] if world.device.type == "cuda" else None)


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `count` (unchanged for None) inside the block, restored after it."""
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
