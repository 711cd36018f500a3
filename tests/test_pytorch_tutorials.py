# test_pytorch_tutorials.py - PyTorch's "Learn the Basics" pages and pytorch/examples'
# MNIST loop, written again here and run with `torch` bound to pygpu (as `import pygpu as
# torch` would), on cpu and sim; where PyTorch is installed the same code runs on torch
# too, from the same initial weights and the same synthetic data, and the numbers must
# agree. Synthetic data replaces the downloads (FashionMNIST, MNIST) and an MLP replaces
# the MNIST example's CNN (no convolutions in pygpu).
#
# Each page is a function taking the library (`torch`) and a device, written as the page
# writes it. A page that needs a tensor method another branch adds (issue 27's tensor
# surface: view, type, eq, ...) is marked xfail(strict=False) while that method is
# missing, naming it; the mark lifts itself once the method exists.
import numpy as np
import pytest

import pygpu
from _mnist_example import mnist_main as _mnist_example

try:
    import torch as real_torch
except ImportError:  # the tutorials still run on pygpu; only the comparisons need torch
    real_torch = None


def _missing(*names):
    """The tensor methods / pygpu functions among `names` that do not exist yet."""
    out = []
    for n in names:
        owner, attr = (pygpu, n[len("pygpu."):]) if n.startswith("pygpu.") else \
            (pygpu.Tensor, n)
        if not hasattr(owner, attr):
            out.append(n)
    return out


def _randint_takes_size():
    try:
        pygpu.randint(3, size=(1,))
        return True
    except Exception:  # noqa: BLE001 - absent, or not yet PyTorch's signature
        return False


def _needs(*names):
    miss = _missing(*names)
    if "pygpu.randint" in names and "pygpu.randint" not in miss and not _randint_takes_size():
        miss.append("pygpu.randint(high, size=...)")
    return pytest.mark.xfail(bool(miss), strict=False,
                             reason=f"needs tensor surface not on this branch yet: {miss}")


def _data_module(lib):
    return lib.utils.data


def _synthetic_images(n, seed, classes=10):
    """FashionMNIST-shaped data: (n, 1, 28, 28) float32 images in [0, 1] whose class is
    learnable (a bright class-dependent band), and int labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.random((n, 1, 28, 28), dtype=np.float32) * 0.5
    rows = (y * 28 // classes)
    for k in range(3):  # vectorized: one bright row band per class
        x[np.arange(n), 0, np.minimum(rows + k, 27), :] += 0.5
    return x, y


def _image_dataset(lib, n, seed):
    """A Dataset as torchvision's FashionMNIST(transform=ToTensor()) gives them:
    dataset[i] == (image tensor (1, 28, 28) float32, int label)."""
    x, y = _synthetic_images(n, seed)

    class FashionLike(_data_module(lib).Dataset):
        def __len__(self):
            return n

        def __getitem__(self, idx):
            return lib.tensor(x[idx]), int(y[idx])
    return FashionLike()


def _neural_network_class(lib):
    """The pages' NeuralNetwork for `lib`, made once per library and bound at module level
    (torch.save(model) pickles the class by name, as it would a class in a script)."""
    name = "NeuralNetwork" if lib is pygpu else "TorchNeuralNetwork"
    if name in globals():
        return globals()[name]
    nn = lib.nn

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 512),
                nn.ReLU(),
                nn.Linear(512, 512),
                nn.ReLU(),
                nn.Linear(512, 10),
            )

        def forward(self, x):
            x = self.flatten(x)
            logits = self.linear_relu_stack(x)
            return logits
    NeuralNetwork.__name__ = NeuralNetwork.__qualname__ = name
    globals()[name] = NeuralNetwork
    return NeuralNetwork


def _same_start(model_pg, model_t):
    """Give the torch model pygpu's initial weights (by state_dict key)."""
    sd = {k: real_torch.tensor(v.numpy()) for k, v in model_pg.state_dict().items()}
    model_t.load_state_dict(sd)


def _devices_for(lib, device):
    return device if lib is pygpu else "cpu"


# ---- quickstart ----------------------------------------------------------------------------

def quickstart(torch, device, tmp_path, make_model=None):
    nn = torch.nn
    DataLoader = torch.utils.data.DataLoader
    training_data = _image_dataset(torch, 384, seed=1)
    test_data = _image_dataset(torch, 128, seed=2)
    batch_size = 64
    train_dataloader = DataLoader(training_data, batch_size=batch_size)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    shapes = []
    for X, y in test_dataloader:
        shapes.append((tuple(X.shape), tuple(y.shape), str(y.dtype).split(".")[-1]))
        break

    model = make_model() if make_model else _neural_network_class(torch)().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)
    losses = []

    def train(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            X, y = X.to(device), y.to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if batch % 2 == 0:
                loss, current = loss.item(), (batch + 1) * len(X)
                losses.append(loss)
                assert current <= size

    def test(dataloader, model, loss_fn):
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        model.eval()
        test_loss, correct = 0, 0
        with torch.no_grad():
            for X, y in dataloader:
                X, y = X.to(device), y.to(device)
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        return test_loss, correct

    results = []
    for t in range(3):
        train(train_dataloader, model, loss_fn, optimizer)
        results.append(test(test_dataloader, model, loss_fn))

    torch.save(model.state_dict(), tmp_path / "model.pth")
    model2 = _neural_network_class(torch)().to(device)
    model2.load_state_dict(torch.load(tmp_path / "model.pth", weights_only=True))
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]
    model2.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model2(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
    return dict(shapes=shapes, losses=losses, results=results, predicted=predicted,
                actual=actual, model=model)


@_needs("type", "pygpu.float", "__index__")
def test_quickstart(device, tmp_path):
    pygpu.manual_seed(0)
    out = quickstart(pygpu, device, tmp_path)
    assert out["shapes"] == [((64, 1, 28, 28), (64,), "int64")]
    (first_loss, first_acc), (last_loss, last_acc) = out["results"][0], out["results"][-1]
    assert last_loss < first_loss and last_acc > 0.5  # it learns
    assert out["predicted"] in ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                                "Shirt", "Sneaker", "Bag", "Ankle boot"]
    if real_torch is None:
        return
    pg_model = None

    def torch_model():
        m = _neural_network_class(real_torch)()
        _same_start(pg_model, m)
        return m
    pygpu.manual_seed(0)
    pg_model = _neural_network_class(pygpu)()  # the same initial weights as the run above
    ref = quickstart(real_torch, "cpu", tmp_path, make_model=torch_model)
    np.testing.assert_allclose(out["losses"], ref["losses"], rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose([r[0] for r in out["results"]], [r[0] for r in ref["results"]],
                               rtol=2e-3)
    assert [r[1] for r in out["results"]] == pytest.approx([r[1] for r in ref["results"]],
                                                           abs=2 / 128)


# ---- tensors -------------------------------------------------------------------------------

def tensors_page(torch, device):
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    shape = (2, 3,)
    rand_tensor = torch.rand(shape)
    ones_tensor = torch.ones(shape)
    zeros_tensor = torch.zeros(shape)
    tensor = torch.rand(3, 4)
    attrs = (tuple(tensor.shape), str(tensor.dtype).split(".")[-1], str(tensor.device))
    tensor = tensor.to(device)
    tensor = torch.ones(4, 4, device=device)
    first_row, first_col, last_col = tensor[0], tensor[:, 0], tensor[..., -1]
    tensor[:, 1] = 0
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    agg = tensor.sum()
    agg_item = agg.item()
    before = tensor.numpy().copy()
    tensor.add_(5)
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    shared_1 = n.tolist()
    n2 = np.ones(5)
    t2 = torch.from_numpy(n2)
    np.add(n2, 1, out=n2)
    return dict(x_data=x_data.tolist(), x_np=x_np.tolist(), x_ones=x_ones.tolist(),
                x_rand_shape=tuple(x_rand.shape), shapes=[tuple(a.shape) for a in
                                                          (rand_tensor, ones_tensor,
                                                           zeros_tensor)],
                attrs=attrs[:2], rows=(first_row.tolist(), first_col.tolist(),
                                       last_col.tolist()),
                t1=t1.tolist(), y=[a.tolist() for a in (y1, y2, y3)],
                z=[a.tolist() for a in (z1, z2, z3)], agg=agg_item, before=before.tolist(),
                after=tensor.tolist(), shared=(shared_1, t2.tolist()))


@_needs("pygpu.rand_like", "matmul", "mul", "add_", "pygpu.mul", "pygpu.float")
def test_tensors(device):
    out = tensors_page(pygpu, device)
    if real_torch is not None:
        ref = tensors_page(real_torch, "cpu")
        for k in out:
            assert out[k] == ref[k], k
    assert out["agg"] == 12.0 and out["shared"] == ([2.0] * 5, [2.0] * 5)


# ---- datasets & dataloaders ----------------------------------------------------------------

def data_page(torch, tmp_path):
    """A custom Dataset over files on disk (the page's CustomImageDataset, with .npy images
    and a CSV of labels instead of JPEGs), iterated by a shuffling DataLoader."""
    import csv
    import os
    Dataset, DataLoader = torch.utils.data.Dataset, torch.utils.data.DataLoader
    x, y = _synthetic_images(40, seed=5)
    img_dir = tmp_path / "imgs"
    img_dir.mkdir(exist_ok=True)
    with open(tmp_path / "labels.csv", "w", newline="") as f:
        w = csv.writer(f)
        for i in range(len(y)):
            np.save(img_dir / f"img{i}.npy", x[i])
            w.writerow([f"img{i}.npy", int(y[i])])

    class CustomImageDataset(Dataset):
        def __init__(self, annotations_file, img_dir, transform=None, target_transform=None):
            with open(annotations_file) as f:
                self.img_labels = [(r[0], int(r[1])) for r in csv.reader(f)]
            self.img_dir = img_dir
            self.transform = transform
            self.target_transform = target_transform

        def __len__(self):
            return len(self.img_labels)

        def __getitem__(self, idx):
            img_path = os.path.join(self.img_dir, self.img_labels[idx][0])
            image = np.load(img_path)
            label = self.img_labels[idx][1]
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    training_data = CustomImageDataset(tmp_path / "labels.csv", img_dir,
                                       transform=torch.from_numpy)
    sample_idx = torch.randint(len(training_data), size=(1,)).item()
    img, label = training_data[sample_idx]
    train_dataloader = DataLoader(training_data, batch_size=16, shuffle=True)
    train_features, train_labels = next(iter(train_dataloader))
    img = train_features[0].squeeze()
    label = train_labels[0]
    seen = sorted(int(v) for _, lb in train_dataloader for v in lb.tolist())
    return dict(batch=(tuple(train_features.shape), tuple(train_labels.shape)),
                img=tuple(img.shape), label=int(label), n=len(train_dataloader), seen=seen)


@_needs("squeeze", "pygpu.randint")
def test_data(tmp_path):
    out = data_page(pygpu, tmp_path)
    assert out["batch"] == ((16, 1, 28, 28), (16,)) and out["img"] == (28, 28)
    assert out["n"] == 3
    if real_torch is not None:
        ref = data_page(real_torch, tmp_path)
        assert out["batch"] == ref["batch"] and out["img"] == ref["img"]
        assert out["seen"] == ref["seen"]


# ---- build the model -----------------------------------------------------------------------

def buildmodel_page(torch, device, start=None):
    nn = torch.nn
    NeuralNetwork = _neural_network_class(torch)
    model = NeuralNetwork().to(device)
    if start is not None:
        _same_start(start, model)
    text = str(model)
    X = torch.tensor(_synthetic_images(1, seed=3)[0][0]).to(device)  # (1, 28, 28)
    logits = model(X)
    pred_probab = nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    input_image = torch.tensor(_synthetic_images(3, seed=4)[0][:, 0])  # (3, 28, 28)
    flatten = nn.Flatten()
    flat_image = flatten(input_image)
    layer1 = nn.Linear(in_features=28 * 28, out_features=20)
    hidden1 = layer1(flat_image)
    hidden1 = nn.ReLU()(hidden1)
    seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))
    logits2 = seq_modules(input_image)
    softmax = nn.Softmax(dim=1)
    probs2 = softmax(logits2)
    params = [(name, tuple(param.size()), tuple(param[:2].shape))
              for name, param in model.named_parameters()]
    return dict(text=text, logits=logits.detach().cpu().numpy(),
                probs=pred_probab.detach().cpu().numpy(), y_pred=y_pred.tolist(),
                flat=tuple(flat_image.shape), hidden=tuple(hidden1.shape),
                probs2_sum=probs2.sum(1).tolist(), params=params,
                nonneg=bool((hidden1.detach().cpu().numpy() >= 0).all()))


def test_buildmodel(device):
    pygpu.manual_seed(0)
    out = buildmodel_page(pygpu, device)
    assert out["flat"] == (3, 784) and out["hidden"] == (3, 20) and out["nonneg"]
    np.testing.assert_allclose(out["probs2_sum"], [1, 1, 1], rtol=1e-6)
    if real_torch is not None:
        pygpu.manual_seed(0)
        start = _neural_network_class(pygpu)()
        ref = buildmodel_page(real_torch, "cpu", start=start)
        assert out["text"] == ref["text"].replace("TorchNeuralNetwork", "NeuralNetwork")
        assert out["params"] == ref["params"]
        np.testing.assert_allclose(out["logits"], ref["logits"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(out["probs"], ref["probs"], rtol=1e-4, atol=1e-7)
        assert out["y_pred"] == ref["y_pred"]


# ---- autograd ------------------------------------------------------------------------------

def autograd_page(torch, device, w0, b0):
    x = torch.ones(5, device=device)  # input tensor
    y = torch.zeros(3, device=device)  # expected output
    w = torch.tensor(w0, device=device).requires_grad_(True)
    b = torch.tensor(b0, device=device).requires_grad_(True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    has_fns = z.grad_fn is not None and loss.grad_fn is not None
    loss.backward()
    grads = (w.grad.cpu().numpy(), b.grad.cpu().numpy())
    z = torch.matmul(x, w) + b
    rg1 = z.requires_grad
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    rg2 = z.requires_grad
    z = torch.matmul(x, w) + b
    z_det = z.detach()
    return dict(loss=loss.item(), grads=grads, flags=(has_fns, rg1, rg2, z_det.requires_grad))


def test_autograd(device):
    rng = np.random.default_rng(7)
    w0, b0 = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(3).astype(
        np.float32)
    out = autograd_page(pygpu, device, w0, b0)
    assert out["flags"] == (True, True, False, False)
    if real_torch is not None:
        ref = autograd_page(real_torch, "cpu", w0, b0)
        assert out["loss"] == pytest.approx(ref["loss"], rel=1e-6)
        for a, b in zip(out["grads"], ref["grads"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def jacobian_page(torch, device):
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    first = inp.grad.tolist()
    out.backward(torch.ones_like(out), retain_graph=True)
    second = inp.grad.tolist()
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    return first, second, inp.grad.tolist()


@_needs("pygpu.eye", "pow", "t", "zero_")
def test_autograd_jacobian_products(device):
    out = jacobian_page(pygpu, device)
    assert out[1] == [[2 * v for v in row] for row in out[0]] and out[2] == out[0]
    if real_torch is not None:
        assert out == jacobian_page(real_torch, "cpu")


# ---- optimization --------------------------------------------------------------------------

def optimization_page(torch, device, start):
    nn = torch.nn
    DataLoader = torch.utils.data.DataLoader
    training_data = _image_dataset(torch, 256, seed=11)
    test_data = _image_dataset(torch, 128, seed=12)
    learning_rate = 1e-1
    batch_size = 64
    epochs = 3
    train_dataloader = DataLoader(training_data, batch_size=batch_size)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    model = _neural_network_class(torch)().to(device)
    if torch is not pygpu:
        _same_start(start, model)
    else:
        model.load_state_dict(start.state_dict())
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    logged = []

    def train_loop(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            X, y = X.to(device), y.to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if batch % 2 == 0:
                loss, current = loss.item(), batch * batch_size + len(X)
                logged.append((loss, current, size))

    def test_loop(dataloader, model, loss_fn):
        model.eval()
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        test_loss, correct = 0, 0
        with torch.no_grad():
            for X, y in dataloader:
                X, y = X.to(device), y.to(device)
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        return test_loss, correct

    results = []
    for t in range(epochs):
        train_loop(train_dataloader, model, loss_fn, optimizer)
        results.append(test_loop(test_dataloader, model, loss_fn))
    return logged, results


@_needs("type", "pygpu.float")
def test_optimization(device):
    pygpu.manual_seed(1)
    start = _neural_network_class(pygpu)()
    logged, results = optimization_page(pygpu, device, start)
    assert results[-1][0] < results[0][0]
    assert [c for _, c, _ in logged] == [64, 192] * 3
    if real_torch is not None:
        ref_logged, ref_results = optimization_page(real_torch, "cpu", start)
        np.testing.assert_allclose([v for v, _, _ in logged], [v for v, _, _ in ref_logged],
                                   rtol=2e-3, atol=1e-4)
        np.testing.assert_allclose(results, ref_results, rtol=2e-3, atol=2 / 128)


# ---- save and load -------------------------------------------------------------------------

def saveload_page(torch, device, tmp_path, start):
    NeuralNetwork = _neural_network_class(torch)
    model = NeuralNetwork().to(device)
    if torch is not pygpu:
        _same_start(start, model)
    else:
        model.load_state_dict(start.state_dict())
    torch.save(model.state_dict(), tmp_path / "model_weights.pth")
    model = NeuralNetwork().to(device)
    model.load_state_dict(torch.load(tmp_path / "model_weights.pth", weights_only=True))
    model.eval()
    x = torch.tensor(_synthetic_images(2, seed=9)[0]).to(device)
    a = model(x).detach().cpu().numpy()
    torch.save(model, tmp_path / "model.pth")
    model = torch.load(tmp_path / "model.pth", weights_only=False)
    b = model(x).detach().cpu().numpy()
    refused = False
    try:
        torch.load(tmp_path / "model.pth")
    except Exception as e:  # noqa: BLE001 - each library raises its own unpickling error
        refused = "weights_only" in str(e)
    return a, b, refused


def test_saveloadrun(device, tmp_path):
    pygpu.manual_seed(2)
    start = _neural_network_class(pygpu)()
    a, b, refused = saveload_page(pygpu, device, tmp_path, start)
    np.testing.assert_array_equal(a, b)
    assert refused  # a whole module needs weights_only=False, as in PyTorch 2.6
    if real_torch is not None:
        ra, rb, rrefused = saveload_page(real_torch, "cpu", tmp_path / "..", start)
        np.testing.assert_allclose(a, ra, rtol=1e-4, atol=1e-6)
        assert rrefused


# ---- pytorch/examples: mnist/main.py with an MLP ----------------------------------------------

def _example_mlp(torch, dropout):
    nn = torch.nn
    F = torch.nn.functional

    class Net(nn.Module):  # the example's CNN, as an MLP
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.dropout1 = nn.Dropout(dropout[0])
            self.dropout2 = nn.Dropout(dropout[1])
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.flatten(x)
            x = self.dropout1(x)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            output = F.log_softmax(x, dim=1)
            return output

    return Net


def mnist_main(torch, device, epochs=2, dropout=(0.25, 0.5), start=None, tmp_path=None):
    log, results, lrs, model = _mnist_example(
        torch, device, _example_mlp(torch, dropout), _synthetic_images(512, seed=21),
        _synthetic_images(200, seed=22), epochs=epochs, start=start, log_interval=2)
    if tmp_path is not None:
        torch.save(model.state_dict(), tmp_path / "mnist_mlp.pt")
    return log, results, lrs, model


@_needs("eq", "view_as")
def test_mnist_example_with_an_mlp(device, tmp_path):
    pygpu.manual_seed(3)
    log, results, lrs, model = mnist_main(pygpu, device, tmp_path=tmp_path)
    assert lrs == pytest.approx([0.7, 0.49])
    assert results[-1][1] > 0.5 and log[-1] < log[0]
    assert set(pygpu.load(tmp_path / "mnist_mlp.pt")) == set(model.state_dict())
    if real_torch is None:
        return
    # without dropout the two libraries see the same numbers: compare them step by step
    pygpu.manual_seed(3)
    plog, pres, _, pmodel = mnist_main(pygpu, device, dropout=(0.0, 0.0))
    tlog, tres, tlrs, _ = mnist_main(real_torch, "cpu", dropout=(0.0, 0.0),
                                     start=_initial_mlp(device))
    np.testing.assert_allclose(plog, tlog, rtol=5e-3, atol=1e-4)
    np.testing.assert_allclose(pres, tres, rtol=5e-3, atol=2 / 200)
    assert tlrs == pytest.approx([0.7, 0.49])


def _initial_mlp(device):
    """The pygpu MLP's initial weights after manual_seed(3), as mnist_main draws them."""
    pygpu.manual_seed(3)
    return _example_mlp(pygpu, (0.0, 0.0))()
