"""The generic dataset path of DataLoader: samples gathered one by one, then collated.

Used for any dataset that is not arrays or a TensorDataset (those are sliced in one op,
loader.py). With num_workers > 0, whole batches are fetched and collated by that many
worker processes, up to num_workers * prefetch_factor batches ahead, and yielded in order,
as PyTorch's (workers.py, worker.py)."""
import itertools

from .collate import default_collate, default_convert


def _batches_of(loader, order):
    """The epoch's index lists (or single indices when batch_size is None)."""
    if loader.batch_sampler is not None:
        return (list(b) for b in loader.batch_sampler)
    if loader.batch_size is None:
        return iter(order)
    from .sampler import BatchSampler
    return iter(BatchSampler(order, loader.batch_size, loader.drop_last))


def _move(batch, device):
    """Tensors in a collated batch moved to the loader's device (pygpu's device= keyword)."""
    from .. import _C
    if isinstance(batch, _C.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _move(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)) and not hasattr(batch, "_fields"):
        return type(batch)(_move(v, device) for v in batch)
    return batch


def _iterable_batches(loader):
    it = iter(loader.dataset)
    if loader.batch_size is None:
        for sample in it:
            yield [sample]
        return
    while True:
        chunk = list(itertools.islice(it, loader.batch_size))
        if not chunk or (loader.drop_last and len(chunk) < loader.batch_size):
            return
        yield chunk


def iter_dataset(loader, order):
    ds = loader.dataset
    unbatched = loader.batch_size is None and loader.batch_sampler is None
    collate = loader.collate_fn or (default_convert if unbatched else default_collate)
    to_device = loader.device.type != "cpu"

    if loader._iterable:
        def make(samples):
            out = collate(samples[0] if unbatched else samples)
            return _move(out, loader.device) if to_device else out
        jobs = _iterable_batches(loader)
    else:
        def make(idx):
            out = collate(ds[idx]) if unbatched else collate([ds[i] for i in idx])
            return _move(out, loader.device) if to_device else out
        jobs = _batches_of(loader, order)

    if loader.num_workers == 0:
        for job in jobs:
            yield make(job)
        return
    from .workers import iter_epoch

    def finish(batch):
        return _move(batch, loader.device) if to_device else batch
    yield from iter_epoch(loader, None if loader._iterable else iter(jobs), collate,
                          not unbatched, finish)
