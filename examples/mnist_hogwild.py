"""Hogwild training, in the shape of pytorch/examples' mnist_hogwild: a model in shared
memory (model.share_memory()) trained by several processes at once, each with its own
optimizer and DataLoader, writing the one set of weights without locks; then tested.

Written for pygpu (`import pygpu as torch`; PYGPU_EXAMPLE_TORCH=1 runs it on PyTorch
itself). MNIST is replaced by a synthetic set of 28x28 digits-like images: class k is a
bright 7x7 square at the k-th of ten places, plus noise, so the CNN learns it within an
epoch or two.

    python examples/mnist_hogwild.py --num-processes 2 --epochs 2
"""
import argparse
import os

if os.environ.get("PYGPU_EXAMPLE_TORCH") == "1":
    import torch
    import torch.multiprocessing as mp
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
else:
    import pygpu as torch
    import pygpu.multiprocessing as mp
    import pygpu.nn as nn
    import pygpu.nn.functional as F
    from pygpu.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_digits(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = torch.randn(n, 1, 28, 28, generator=g) * 0.3
    for k in range(10):
        r, c = 2 + 8 * (k // 4), 2 + 8 * (k % 4)  # ten places on a 3 x 4 grid
        mask = (labels == k).float().view(n, 1, 1, 1)
        images[:, :, r:r + 7, c:c + 7] += mask
    return TensorDataset(images, labels)


def train(rank, args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed + rank)
    train_loader = DataLoader(dataset, **dataloader_kwargs)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data.to(device))
            loss = F.nll_loss(output, target.to(device))
            loss.backward()
            optimizer.step()
            if batch_idx % args.log_interval == 0:
                print(f"{os.getpid()}\tTrain Epoch: {epoch} [{batch_idx * len(data)}/"
                      f"{len(train_loader.dataset)}]\tLoss: {loss.item():.6f}", flush=True)


def test(args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed)
    test_loader = DataLoader(dataset, **dataloader_kwargs)
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction="sum").item()
            pred = output.max(1)[1]
            correct += pred.eq(target.to(device)).sum().item()
    n = len(test_loader.dataset)
    print(f"\nTest set: Average loss: {test_loss / n:.4f}, Accuracy: {correct}/{n} "
          f"({100.0 * correct / n:.0f}%)\n", flush=True)


def main():
    parser = argparse.ArgumentParser(description="Hogwild training on synthetic digits")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--test-batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--train-size", type=int, default=1024)
    parser.add_argument("--start-method", default="spawn")
    parser.add_argument("--num-workers", type=int, default=0)
    args = parser.parse_args()

    device = torch.device("cpu")
    train_set = synthetic_digits(args.train_size, seed=0)
    test_set = synthetic_digits(512, seed=1)
    kwargs = {"batch_size": args.batch_size, "shuffle": True}
    if args.num_workers:
        kwargs.update(num_workers=args.num_workers)

    torch.manual_seed(args.seed)
    mp.set_start_method(args.start_method, force=True)

    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    before = [p.detach().clone() for p in model.parameters()]

    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device, train_set, kwargs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    codes = [p.exitcode for p in processes]
    print(f"exit codes: {codes}")
    moved = sum(float((p.detach() - b).abs().sum()) for p, b in zip(model.parameters(), before))
    print(f"shared weights moved by: {moved:.4f}")

    test(args, model, device, test_set, {"batch_size": args.test_batch_size})


if __name__ == "__main__":
    main()
