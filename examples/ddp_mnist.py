"""The quickstart MLP on MNIST under torchrun, with a thinwire codec as the DDP hook.

    torchrun --nproc-per-node 2 examples/ddp_mnist.py "ef(topk(ratio=0.01))" 600

The seeds, shards and batches are the in-process runner's (``experiment/runner.py``), so
this run and Plump-DP with the same push codec train on the same samples from the same
initial model.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from thinwire.datasets import BatchStream, load_dataset, partition, prepare
from thinwire.ddp import CodecHook
from thinwire.models import build_model
from thinwire.seed_tree import SeedTree

codec, steps = sys.argv[1], int(sys.argv[2])
gpu = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if torch.cuda.is_available() else None
dist.init_process_group("gloo" if gpu is None else "nccl")
rank, world, seeds = dist.get_rank(), dist.get_world_size(), SeedTree(0)
data = load_dataset("mnist")
x, y = prepare(data.train_images, data.mean, data.std).to(gpu), data.train_labels.to(gpu)
model = DDP(build_model("mlp", x.shape[1:], 10, seeds.seed("run", None, "init")).to(gpu))
hook = CodecHook(codec, seed=0).register(model)
sgd = torch.optim.SGD(model.parameters(), lr=0.1)
shard = partition(len(y), world, seeds.seed("run", None, "partition"))[rank]
batches = BatchStream(shard, 32, seeds.seed("worker", rank, "batches"))
for step in range(steps):
    i = batches.next_indices()
    sgd.zero_grad()
    torch.nn.functional.cross_entropy(model(x[i]), y[i]).backward()
    sgd.step()
with torch.no_grad():
    test = prepare(data.test_images, data.mean, data.std).to(gpu)
    accuracy = (model(test).argmax(1) == data.test_labels.to(gpu)).float().mean().item()
ledger = hook.save(f"ddp_ledger_{rank}.json").resolve()
sent = hook.per_step()
print(f"rank {rank}: test accuracy {100 * accuracy:.2f}%, sent {sum(sent['bytes']):,} bytes "
      f"({sum(sent['payload_bytes']):,} payload) in {hook.step} steps")
if rank == 0:  # the reference: the same all-gather with every gradient sent as float32 (payload)
    fp32 = 4 * sum(p.numel() for p in model.parameters()) * (world - 1) * hook.step
    print(f"rank 0: fp32 would send {fp32:,} payload bytes: {codec} sends {fp32 / sum(sent['payload_bytes']):.1f}x "
          f"fewer; ledger in {ledger}")
dist.destroy_process_group()
