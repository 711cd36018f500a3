# test_index_host_check.py - a Python list's indices are checked at the call, on every device.
#
# The values of t[[0, 5]] are known on the host, so an index out of range is an IndexError
# where the user wrote it, with PyTorch's words, on cpu, sim and cuda alike (issue 39: on
# an asynchronous device it used to surface only at the next read, as AsyncOpError). An
# index *tensor* living on the device keeps the asynchronous path: checking it on the host
# would copy it back and wait for the device.
import numpy as np
import pytest
import torch

import pygpu


def _call(fn):
    """(exception type, message) that fn raises, or (None, None)."""
    try:
        fn()
    except Exception as e:  # compared below
        return type(e), str(e)
    return None, None


CASES = [  # (what, shape, how it indexes); each raises IndexError in PyTorch
    ("one axis", (3,), lambda t: t[[0, 5]]),
    ("negative", (3,), lambda t: t[[0, -4]]),
    ("after an int", (2, 3), lambda t: t[0, [0, 5]]),
    ("second of two lists", (2, 3), lambda t: t[[0, 1], [0, 5]]),
    ("nested list", (3, 2), lambda t: t[[[0, 1], [2, 3]], :]),
    ("assignment", (3,), lambda t: t.__setitem__([0, 5], 1.0)),
    ("assignment of a tensor", (2, 3), lambda t: t.__setitem__((slice(None), [4]), t[:, :1])),
]


@pytest.mark.parametrize("what,shape,index", CASES, ids=[c[0] for c in CASES])
def test_an_index_list_out_of_range_raises_at_the_call(device, what, shape, index):
    ref_type, ref_msg = _call(lambda: index(torch.ones(shape)))
    assert ref_type is IndexError
    t = pygpu.ones(shape, device=device)
    with pytest.raises(IndexError) as info:
        index(t)  # no read, no synchronize: raised by the call itself
    msg = str(info.value)
    assert "is out of bounds for dimension" in msg and "with size" in msg
    assert msg.split(" for dimension")[0] == ref_msg.split(" for dimension")[0]  # the index
    assert msg.split("with size ")[1] == ref_msg.split("with size ")[1]  # the size
    pygpu.synchronize()  # nothing was queued that fails later
    np.testing.assert_array_equal(t.numpy(), np.ones(shape, np.float32))  # unchanged


def test_the_message_is_pytorchs(device):
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 0 with size 3$"):
        pygpu.ones(3, device=device)[[0, 5]]
    with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 1 with size 3$"):
        pygpu.ones(2, 3, device=device)[[0, 1], [0, 5]]


def test_index_lists_in_range_still_select(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = pygpu.tensor(x, device=device)
    np.testing.assert_array_equal(t[[0, -1, 2]].numpy(), x[[0, -1, 2]])
    np.testing.assert_array_equal(t[1, [3, -4]].numpy(), x[1, [3, -4]])
    np.testing.assert_array_equal(t[[[0, 2], [1, 1]], :].numpy(), x[np.array([[0, 2], [1, 1]])])
    t[[0, 2], [3, 3]] = 9.0
    x[[0, 2], [3, 3]] = 9.0
    np.testing.assert_array_equal(t.numpy(), x)


def test_an_index_tensor_on_an_asynchronous_device_stays_asynchronous(device):
    t = pygpu.ones(3, device=device)
    idx = pygpu.tensor([0, 5], device=device)
    if pygpu.device(device).type == "cpu":  # cpu computes at the call: the kernel raises
        with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
            t[idx]
        return
    out = t[idx]  # queued: the indices live on the device, nothing is read back to check them
    with pytest.raises(pygpu.AsyncOpError, match="index 5 is out of bounds"):
        out.numpy()
