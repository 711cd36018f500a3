"""spawn()'s exceptions, PyTorch's: the classes both ways of starting processes raise
(spawn.py with Python's multiprocessing, mpi_job.py as an MPI job)."""


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed with an exception of its code (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A process exited with a nonzero code or was killed by a signal."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)
