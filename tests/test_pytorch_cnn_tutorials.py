# test_pytorch_cnn_tutorials.py - the convolutional pages, written again here and run with
# `torch` bound to pygpu (as `import pygpu as torch` would), on cpu and sim (and cuda where
# present): pytorch/examples' mnist/main.py with its CNN as written, and the 60-minute
# blitz's "Neural Networks" and "Training a Classifier" (CIFAR-10) pages. Random tensors of
# the datasets' shapes replace the downloads (torchvision is not used); where PyTorch is
# installed the same code runs on torch from pygpu's initial weights and the numbers must
# agree. Each page is a function taking the library and a device, written as the page is.
import numpy as np
import pytest

import pygpu
from _mnist_example import mnist_main as _mnist_example

try:
    import torch as real_torch
except ImportError:  # the pages still run on pygpu; only the comparisons need torch
    real_torch = None


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    """The reference runs on one torch thread: at batch 4 on a loaded 2-core machine, torch's
    OpenMP threads spin for each other (30 s for the CIFAR page, 1 s on one thread)."""
    if real_torch is None:
        yield
        return
    threads = real_torch.get_num_threads()
    real_torch.set_num_threads(1)
    yield
    real_torch.set_num_threads(threads)


def _same_start(model_pg, model_t):
    model_t.load_state_dict({k: real_torch.tensor(v.numpy())
                             for k, v in model_pg.state_dict().items()})


def _images(n, shape, seed, classes=10):
    """Images of `shape` whose class is learnable (a class-dependent bright band), labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.random((n,) + shape, dtype=np.float32) * 0.5
    rows = y * shape[1] // classes
    for k in range(2):
        x[np.arange(n), :, np.minimum(rows + k, shape[1] - 1), :] += 0.5
    return x, y


# ---- pytorch/examples: mnist/main.py, its CNN as written ----------------------------------------

def _example_cnn(torch, dropout):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(dropout[0])
            self.dropout2 = nn.Dropout(dropout[1])
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            output = F.log_softmax(x, dim=1)
            return output

    return Net


def mnist_main(torch, device, epochs=2, dropout=(0.25, 0.5), start=None, n=256):
    log, results, _, model = _mnist_example(
        torch, device, _example_cnn(torch, dropout), _images(n, (1, 28, 28), seed=31),
        _images(100, (1, 28, 28), seed=32), epochs=epochs, start=start, log_interval=1)
    return log, results, model


def test_mnist_example_cnn(device):
    pygpu.manual_seed(1)
    log, results, model = mnist_main(pygpu, device)
    assert results[-1][1] > 0.2 and log[-1] < log[0]  # chance is 0.1
    if real_torch is None:
        return
    # without dropout both libraries see the same numbers, step by step
    pygpu.manual_seed(1)
    plog, pres, pmodel = mnist_main(pygpu, device, epochs=1, dropout=(0.0, 0.0))
    pygpu.manual_seed(1)
    start = mnist_main(pygpu, "cpu", epochs=0, dropout=(0.0, 0.0))[2]
    tlog, tres, _ = mnist_main(real_torch, "cpu", epochs=1, dropout=(0.0, 0.0), start=start)
    np.testing.assert_allclose(plog, tlog, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(pres, tres, rtol=2e-3, atol=2 / 100)


# ---- the blitz's "Neural Networks" page ---------------------------------------------------------

def neural_networks_page(torch, device, start=None):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):

        def __init__(self):
            super(Net, self).__init__()
            # 1 input image channel, 6 output channels, 5x5 square convolution kernel
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            # an affine operation: y = Wx + b
            self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5*5 from image dimension
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, input):
            # Convolution layer C1: 1 input image channel, 6 output channels,
            # 5x5 square convolution, it uses RELU activation function
            c1 = F.relu(self.conv1(input))
            # Subsampling layer S2: 2x2 grid, purely functional
            s2 = F.max_pool2d(c1, (2, 2))
            # Convolution layer C3: 6 input channels, 16 output channels, 5x5, RELU
            c3 = F.relu(self.conv2(s2))
            # Subsampling layer S4: 2x2 grid, purely functional
            s4 = F.max_pool2d(c3, 2)
            # Flatten operation: purely functional, outputs a (N, 400) Tensor
            s4 = torch.flatten(s4, 1)
            # Fully connected layers F5, F6, and the output layer
            f5 = F.relu(self.fc1(s4))
            f6 = F.relu(self.fc2(f5))
            output = self.fc3(f6)
            return output

    net = Net().to(device)
    if start is not None:
        _same_start(start, net)
    printed = [str(net)]
    params = list(net.parameters())
    sizes = (len(params), tuple(params[0].size()))  # conv1's .weight

    rng = np.random.default_rng(7)
    input = torch.tensor(rng.standard_normal((1, 1, 32, 32)).astype(np.float32)).to(device)
    out = net(input)
    net.zero_grad()
    out.backward(torch.tensor(rng.standard_normal((1, 10)).astype(np.float32)).to(device))

    output = net(input)
    target = torch.tensor(rng.standard_normal(10).astype(np.float32)).to(device)
    target = target.view(1, -1)  # make it the same shape as output
    criterion = nn.MSELoss()
    loss = criterion(output, target)
    chain = [loss.grad_fn, loss.grad_fn.next_functions[0][0],
             loss.grad_fn.next_functions[0][0].next_functions[0][0]]

    net.zero_grad()  # zeroes the gradient buffers of all parameters
    before = net.conv1.bias.grad
    loss.backward()
    after = net.conv1.bias.grad.cpu().numpy().copy()

    learning_rate = 0.01
    for f in net.parameters():
        f.data.sub_(f.grad.data * learning_rate)

    import_optim = torch.optim
    optimizer = import_optim.SGD(net.parameters(), lr=0.01)
    optimizer.zero_grad()  # zero the gradient buffers
    output = net(input)
    loss = criterion(output, target)
    loss.backward()
    optimizer.step()  # Does the update
    return dict(printed=printed, sizes=sizes, out=out.detach().cpu().numpy(),
                chain=[c is not None for c in chain], before=before, after=after,
                loss=loss.item(), w=net.conv1.weight.detach().cpu().numpy())


def test_neural_networks_page(device):
    pygpu.manual_seed(2)
    out = neural_networks_page(pygpu, device)
    assert out["sizes"] == (10, (6, 1, 5, 5)) and all(out["chain"])
    assert out["before"] is None and out["after"].shape == (6,)
    if real_torch is None:
        return
    ref = neural_networks_page(real_torch, "cpu", start=_lenet_start())
    assert out["printed"] == ref["printed"]
    for k in ("out", "after", "loss", "w"):
        np.testing.assert_allclose(out[k], ref[k], rtol=1e-4, atol=1e-6, err_msg=k)


def _lenet_start():
    """The page's Net with pygpu's initial weights after manual_seed(2)."""
    pygpu.manual_seed(2)
    nn = pygpu.nn
    m = nn.Module()
    m.conv1, m.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
    m.fc1, m.fc2, m.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)
    return m


# ---- the blitz's "Training a Classifier" (CIFAR-10) page ----------------------------------------

def cifar10_page(torch, device, start=None, n=200, epochs=2):
    nn = torch.nn
    F = torch.nn.functional
    optim = torch.optim
    classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    batch_size = 4
    # torchvision.datasets.CIFAR10(transform=ToTensor, Normalize(0.5, 0.5)): random tensors
    x1, y1 = _images(n, (3, 32, 32), seed=41)
    x2, y2 = _images(80, (3, 32, 32), seed=42)
    trainset = torch.utils.data.TensorDataset(torch.tensor((x1 - 0.5) / 0.5),
                                              torch.tensor(y1))
    trainloader = torch.utils.data.DataLoader(trainset, batch_size=batch_size, shuffle=False)
    testset = torch.utils.data.TensorDataset(torch.tensor((x2 - 0.5) / 0.5), torch.tensor(y2))
    testloader = torch.utils.data.DataLoader(testset, batch_size=batch_size, shuffle=False)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)  # flatten all dimensions except batch
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            x = self.fc3(x)
            return x

    net = Net().to(device)
    if start is not None:
        _same_start(start, net)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    losses = []
    for epoch in range(epochs):  # loop over the dataset multiple times
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            # get the inputs; data is a list of [inputs, labels]
            inputs, labels = data[0].to(device), data[1].to(device)
            # zero the parameter gradients
            optimizer.zero_grad()
            # forward + backward + optimize
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            # print statistics
            running_loss += loss.item()
            if i % 10 == 9:  # every 10 mini-batches
                losses.append(running_loss / 10)
                running_loss = 0.0

    state = {k: v.cpu().numpy() for k, v in net.state_dict().items()}
    net = Net().to(device)  # PATH = './cifar_net.pth'; save, then load into a new Net
    net.load_state_dict({k: torch.tensor(v).to(device) for k, v in state.items()})

    dataiter = iter(testloader)
    images, labels = next(dataiter)
    outputs = net(images.to(device))
    _, predicted = torch.max(outputs, 1)
    first = " ".join(f"{classes[predicted[j]]:5s}" for j in range(4))

    correct = 0
    total = 0
    # since we're not training, we don't need to calculate the gradients for our outputs
    with torch.no_grad():
        for data in testloader:
            images, labels = data[0].to(device), data[1].to(device)
            # calculate outputs by running images through the network
            outputs = net(images)
            # the class with the highest energy is what we choose as prediction
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()

    # prepare to count predictions for each class
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data in testloader:
            images, labels = data[0].to(device), data[1].to(device)
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            # collect the correct predictions for each class
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    return dict(losses=losses, accuracy=correct / total, first=first,
                per_class={c: correct_pred[c] / max(total_pred[c], 1) for c in classes})


def test_cifar10_page(device):
    pygpu.manual_seed(4)
    out = cifar10_page(pygpu, device)
    assert len(out["losses"]) == 10 and all(np.isfinite(out["losses"]))
    assert out["accuracy"] == pytest.approx(np.mean(list(out["per_class"].values())), abs=0.2)
    if real_torch is None:
        return
    pygpu.manual_seed(4)
    nn = pygpu.nn
    start = nn.Module()
    start.conv1, start.pool, start.conv2 = nn.Conv2d(3, 6, 5), nn.MaxPool2d(2, 2), \
        nn.Conv2d(6, 16, 5)
    start.fc1, start.fc2, start.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)
    ref = cifar10_page(real_torch, "cpu", start=start)
    np.testing.assert_allclose(out["losses"], ref["losses"], rtol=2e-3, atol=1e-4)
    assert out["accuracy"] == pytest.approx(ref["accuracy"], abs=2 / 80)
