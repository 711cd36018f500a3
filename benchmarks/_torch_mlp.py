# _torch_mlp.py - the PyTorch twin of pygpu.nn.MLP that the training benchmarks compare
# against: Linear layers with ReLU between them (none after the last), same sizes.


def torch_mlp(torch, sizes):
    """torch.nn.Sequential of Linear(a, b) for consecutive sizes, ReLU between them."""
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)
