# data_parallel_foonet.py - the multi-GPU guide's DataParallel script, ported to pygpu with sim devices.
#
# The guide's script, run as written: same order, same calls; only the device type changed
# (torch -> pygpu, "cuda" -> "sim", torch.cuda -> pygpu.sim). Its "choose the main GPU by free
# memory" part parsed `nvidia-smi`; pygpu.sim.mem_get_info(i) gives the same (free, total) that
# torch.cuda.mem_get_info does. sim has no CUDA_VISIBLE_DEVICES to reorder, so the device list
# is printed rather than exported. Run: python examples/data_parallel_foonet.py
# (PYGPU_SIM_DEVICES=2, the default, gives the guide's two devices).
import os
import numpy as np
import pygpu
import pygpu.nn as nn

# ============================ choose the main device by free memory
flag = 1
if flag:
    def get_gpu_memory():
        return [pygpu.sim.mem_get_info(i)[0] for i in range(pygpu.sim.device_count())]

    gpu_memory = get_gpu_memory()
    if gpu_memory:
        print("\ngpu free memory: {}".format(gpu_memory))
        gpu_list = np.argsort(gpu_memory, kind="stable")[::-1]
        print("devices by free memory: {}".format(gpu_list.tolist()))
    device = pygpu.device("sim" if pygpu.sim.is_available() else "cpu")


class FooNet(nn.Module):
    def __init__(self, neural_num, layers=3):
        super(FooNet, self).__init__()
        self.linears = nn.ModuleList([nn.Linear(neural_num, neural_num, bias=False) for i in range(layers)])

    def forward(self, x):
        print("\nbatch size in forward: {}".format(x.size()[0]))
        for (i, linear) in enumerate(self.linears):
            x = linear(x)
            x = pygpu.relu(x)
        return x


if __name__ == "__main__":
    batch_size = 16

    # data
    inputs = pygpu.randn(batch_size, 3)
    labels = pygpu.randn(batch_size, 3)

    inputs, labels = inputs.to(device), labels.to(device)

    # model
    net = FooNet(neural_num=3, layers=3)
    net = nn.DataParallel(net)
    net.to(device)

    # training
    for epoch in range(1):
        outputs = net(inputs)
        print("model outputs.size: {}".format(outputs.size()))

    print("PYGPU_SIM_DEVICES :{}".format(os.environ.get("PYGPU_SIM_DEVICES", "2 (the default)")))
    print("device_count :{}".format(pygpu.sim.device_count()))
