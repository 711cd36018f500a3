# test_conv_training.py - a LeNet and a small ResNet (basic blocks, one with a strided 1x1
# downsample) trained step by step beside torch from the same weights: the losses agree at
# every step, and so do the weights and BatchNorm's running statistics at the end. float64,
# so the comparison is tight; on every device.
import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    """torch's reference on one thread: small batches on a loaded machine make its OpenMP
    threads spin for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def lenet(lib, dtype):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2, dtype=dtype), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, dtype=dtype), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120, dtype=dtype), nn.ReLU(), nn.Linear(120, 84, dtype=dtype),
        nn.ReLU(), nn.Linear(84, 10, dtype=dtype))


def resnet(lib, dtype):
    nn = lib.nn
    F = lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False, dtype=dtype)
            self.bn1 = nn.BatchNorm2d(cout, dtype=dtype)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False, dtype=dtype)
            self.bn2 = nn.BatchNorm2d(cout, dtype=dtype)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False, dtype=dtype),
                    nn.BatchNorm2d(cout, dtype=dtype))

        def forward(self, x):
            identity = x
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            return F.relu(out + identity)

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False, dtype=dtype), nn.BatchNorm2d(8, dtype=dtype),
        nn.ReLU(), BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(16, 10, dtype=dtype))


@pytest.mark.parametrize("name,make,shape", [("lenet", lenet, (1, 28, 28)),
                                             ("resnet", resnet, (3, 16, 16))])
def test_trained_step_by_step_beside_torch(device, name, make, shape):
    pygpu.manual_seed(0)
    ours = make(pygpu, pygpu.float64).to(device)
    ref = make(torch, torch.float64)
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    opt = pygpu.optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    topt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    for step in range(4):
        x = rng.standard_normal((8,) + shape)
        y = rng.integers(0, 10, 8)
        opt.zero_grad()
        loss = pygpu.nn.functional.cross_entropy(ours(pygpu.tensor(x, device=device)),
                                                 pygpu.tensor(y, device=device))
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y))
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-9, abs=1e-12), step
    for (k, v), (tk, tv) in zip(ours.state_dict().items(), ref.state_dict().items()):
        assert k == tk
        np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-8, atol=1e-10, err_msg=k)
    ours.eval()
    ref.eval()
    x = rng.standard_normal((2,) + shape)
    np.testing.assert_allclose(ours(pygpu.tensor(x, device=device)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-8, atol=1e-10)
