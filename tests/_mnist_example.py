# _mnist_example.py - pytorch/examples' mnist/main.py, written once for the tests that run it.
#
# Its train and test loops, Adadelta with StepLR, and the log of every log_interval-th batch's
# loss, as the example has them; `torch` is the library to run it with (pygpu or PyTorch, the
# oracle). The model class and the data are the caller's: test_pytorch_cnn_tutorials.py runs
# the example's CNN as written, test_pytorch_tutorials.py an MLP in its place.


def mnist_main(torch, device, Net, train_data, test_data, epochs=2, start=None, log_interval=1,
               batch_size=64, test_batch_size=100):
    """Train Net on train_data = (images, labels) (NumPy) for `epochs` and test it on test_data
    after each: (the logged losses, [(test loss, accuracy)] per epoch, the learning rate after
    each epoch, the model). `start`, a pygpu model, gives the model its initial weights."""
    F = torch.nn.functional
    optim = torch.optim
    StepLR = torch.optim.lr_scheduler.StepLR
    log = []

    def train(args, model, device, train_loader, optimizer, epoch):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            if batch_idx % args["log_interval"] == 0:
                log.append(loss.item())

    def test(model, device, test_loader):
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        return test_loss, correct / len(test_loader.dataset)

    args = dict(batch_size=batch_size, test_batch_size=test_batch_size, lr=1.0, gamma=0.7,
                log_interval=log_interval)
    train_kwargs = {"batch_size": args["batch_size"]}
    test_kwargs = {"batch_size": args["test_batch_size"]}
    (x1, y1), (x2, y2) = train_data, test_data
    dataset1 = torch.utils.data.TensorDataset(torch.tensor(x1), torch.tensor(y1))
    dataset2 = torch.utils.data.TensorDataset(torch.tensor(x2), torch.tensor(y2))
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
    model = Net().to(device)
    if start is not None:  # pygpu's initial weights, by state_dict key
        model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in start.state_dict().items()})
    optimizer = optim.Adadelta(model.parameters(), lr=args["lr"])
    scheduler = StepLR(optimizer, step_size=1, gamma=args["gamma"])
    results, lrs = [], []
    for epoch in range(1, epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        results.append(test(model, device, test_loader))
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    return log, results, lrs, model
