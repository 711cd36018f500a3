# ddp_local_rank.py - the multi-GPU guide's DistributedDataParallel script, ported to pygpu with sim.
#
# The guide's script, run as written: same order, same calls; only the device type changed
# (torch -> pygpu, "cuda" -> "sim", and so the backend "nccl" -> "mpi", which carries sim and cpu
# tensors). The guide's text describes its calls (--local_rank, set_device, init_process_group
# with env://, DistributedDataParallel with device_ids=[local_rank], a DistributedSampler); the
# data, model and loop around them are PyTorch's DDP tutorial's. pygpu's DataLoader takes the
# arrays (X, y) where torch's takes a TensorDataset. The last line (the weights' checksum on every
# rank, equal when DDP works) is added so that CI can check the run. Start it as the guide does:
#
#   python -m pygpu.distributed.launch --nproc_per_node=2 examples/ddp_local_rank.py
#   mpirun -np 2 python examples/ddp_local_rank.py      (every rank then keeps --local_rank 0:
#                                                         each process has its own sim:0)
import argparse

import numpy as np
import pygpu
import pygpu.distributed as dist
import pygpu.nn as nn
from pygpu.data import DataLoader
from pygpu.data.distributed import DistributedSampler
from pygpu.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()

pygpu.sim.set_device(args.local_rank)
dist.init_process_group("mpi", init_method="env://")
device = pygpu.device("sim", args.local_rank)


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


# data: every rank builds the same data set; the sampler gives each rank its share
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 10)).astype(np.float32)
y = rng.standard_normal((256, 5)).astype(np.float32)
train_sampler = DistributedSampler(x)
train_loader = DataLoader(x, y, batch_size=32, sampler=train_sampler)

pygpu.manual_seed(dist.get_rank())  # different on purpose: DDP starts every rank from rank 0's
model = ToyModel().to(device)
model = DDP(model, device_ids=[args.local_rank], output_device=args.local_rank)
loss_fn = nn.MSELoss()
optimizer = pygpu.optim.SGD(model.parameters(), lr=0.01)

for epoch in range(2):
    train_sampler.set_epoch(epoch)
    for inputs, labels in train_loader:
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        print("epoch {} loss {:.6f}".format(epoch, loss.item()))

checksum = sum(float(p.detach().numpy().astype(np.float64).sum()) for p in model.parameters())
print("rank {} of {} on {}: weights checksum {:.12f}".format(dist.get_rank(), dist.get_world_size(),
                                                            device, checksum))
