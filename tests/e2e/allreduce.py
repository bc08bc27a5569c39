"""allreduce.py - one rank of test_torchrun.sh's distributed run, started by
torchrun on every node of a suanli lease (gloo backend, CPU only).

Each rank contributes a tensor that depends on its rank; after all_reduce
every rank must hold the sum over all ranks. The rank also checks that
torchrun's view of the world agrees with the environment suanli set
(NNODES, NODE_RANK), so the test proves that environment is what real
training uses. Prints "OK rank=R world=W sum=S" and exits 0, or a reason
and exits 1.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    nnodes = int(os.environ["NNODES"])
    node_rank = int(os.environ["NODE_RANK"])
    if world != nnodes or rank != node_rank:
        print(f"FAIL torch sees rank {rank} of {world}; suanli set "
              f"NODE_RANK={node_rank} NNODES={nnodes}", flush=True)
        return 1
    # rank r holds [r+1, 2(r+1), 3(r+1), 4(r+1)]; the sum over r of (r+1) is
    # world(world+1)/2, times each position's factor.
    t = torch.arange(1, 5, dtype=torch.float64) * (rank + 1)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    s = world * (world + 1) // 2
    want = torch.arange(1, 5, dtype=torch.float64) * s
    if not torch.equal(t, want):
        print(f"FAIL rank {rank}: all_reduce gave {t.tolist()}, want {want.tolist()}",
              flush=True)
        return 1
    dist.barrier()
    dist.destroy_process_group()
    print(f"OK rank={rank} world={world} sum={s} master={os.environ['MASTER_ADDR']}:"
          f"{os.environ['MASTER_PORT']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
