"""torch.futures: Future, collect_all and wait_all, with PyTorch's eager semantics.

A Future holds one value or one exception, set once (set_result / set_exception); wait()
blocks until then and returns the value or raises the exception; then(fn) chains a new
Future whose value is fn(self), or the error fn raised, wrapped as PyTorch wraps it
("Got the following error when running the callback: ..."); add_done_callback(fn) runs fn
when it completes, logging and dropping an error fn raises (PyTorch does the same). A
callback added to a completed Future runs at once, on the caller's thread; otherwise on the
thread that completes it. Thread-safe: one lock and condition per Future.

pygpu.Future (torch.Future, the type torch.jit.fork returns) is this class; pygpu.jit.fork
runs its function at once, as eager PyTorch does (pygpu/jit)."""
import logging as _logging
import threading as _threading
import traceback as _traceback
import types as _types

__all__ = ["Future", "collect_all", "wait_all"]

_log = _logging.getLogger(__name__)


def _callback_error(e):
    """PyTorch's wrapping of an exception a then() callback raised: a RuntimeError with the
    original's type, message and traceback."""
    frames = "".join(f"  {f.filename}({f.lineno}): {f.name}\n"
                     for f in _traceback.extract_tb(e.__traceback__))
    return RuntimeError(f"Got the following error when running the callback: "
                        f"{type(e).__name__}: {e}\n\nAt:\n{frames}")


class Future:
    """An eventually available value (torch.futures.Future)."""

    __class_getitem__ = classmethod(_types.GenericAlias)  # Future[int], as PyTorch's

    def __init__(self, *, devices=None):
        from .._device import device as _device
        self._cond = _threading.Condition()
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._devices = []
        for d in devices or ():
            dev = _device(d)
            if dev.type == "cpu":  # torch.device("cpu") has no index: PyTorch's refusal
                raise ValueError(f"Expected devices to have indices, got {dev.type}")
            self._devices.append(dev)

    def done(self):
        """Whether a value or an exception is set."""
        return self._done

    def wait(self):
        """Block until the Future completes; its value, or raise its exception."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        return self.value()

    def value(self):
        """The value of a completed Future (raises its exception); RuntimeError before."""
        if not self._done:
            raise RuntimeError("Future.value(): the Future is not completed yet (call wait(), "
                               "or read the value inside a callback passed to then())")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback):
        """A new Future completed with callback(self) once this one completes (at once
        when it already has); an exception callback raises completes it with that error."""
        out = Future(devices=self._devices)

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - the chained Future carries any error
                out.set_exception(_callback_error(e))
            else:
                out.set_result(result)
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback):
        """callback(self) once this Future completes (at once when it already has). Its
        return value is dropped; an exception it raises is logged and dropped."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        self._run(callback)

    def _run(self, callback):
        try:
            callback(self)
        except Exception as e:  # noqa: BLE001 - PyTorch logs a done-callback's error
            _log.error("%s", _callback_error(e))

    def set_result(self, result):
        """Complete the Future with `result`; RuntimeError when it is completed already."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete the Future with the exception `result`, which wait() raises."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, error):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            self._run(cb)

    def __repr__(self):
        state = "pending" if not self._done else ("error" if self._error else "done")
        return f"<pygpu.futures.Future ({state})>"


def collect_all(futures):
    """A Future completed, with the list of `futures` as its value, once every one of them
    is; where one completed with an error, the first such error (in list order) is its
    error, as PyTorch's."""
    futures = list(futures)
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"collect_all(): incompatible function arguments: expected a "
                            f"sequence of Futures, got a {type(f).__name__} in it")
    out = Future()
    left = [len(futures)]
    lock = _threading.Lock()

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            failed = [f._error for f in futures if f._error is not None]
            if failed:
                out.set_exception(failed[0])
            else:
                out.set_result(futures)
    if not futures:
        out.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """The values of `futures`, in order, once all are complete; the first error raised."""
    return [f.value() for f in collect_all(futures).wait()]
