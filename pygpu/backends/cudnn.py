"""torch.backends.cudnn: the cuDNN switches (torch.backends.cudnn.benchmark = True).

pygpu does not use cuDNN: is_available() is False and version() None. The switches keep
the values a program sets (enabled, benchmark, deterministic, allow_tf32), so programs
that set them run; pygpu's kernels are deterministic for a given device and thread count
whatever `deterministic` says."""
enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    return False
