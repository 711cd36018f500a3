"""nn.utils.spectral_norm and remove_spectral_norm: the hook form of spectral normalization
(Miyato et al., the GAN discriminator's), as torch.nn.utils.spectral_norm has it. The
parameter becomes name_orig; buffers name_u and name_v hold the power iteration's vectors;
a forward pre-hook sets name = name_orig / sigma, sigma estimated by n_power_iterations
steps of power iteration in training (none in eval). The state_dict carries the hook's
version in its metadata and loads checkpoints of version 0 (name_v recomputed), as PyTorch's."""
from ...autograd import no_grad
from ...linalg import multi_dot
from .. import functional as F
from ..parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook spectral_norm registers."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.dim()) if d != self.dim])
        return mat.reshape(mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(mat.mv(v), dim=0, eps=self.eps, out=u)
                u = u.clone()  # the next call's in-place update must not touch this one's
                v = v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module,
                                                       do_power_iteration=module.training))

    def _solve_v_and_rescale(self, mat, u, target_sigma):
        v = multi_dot([mat.t().mm(mat).pinverse(), mat.t(), u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / u.dot(mat.mv(v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight)
            h, w = mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Loads a version-0 checkpoint (name, name_orig, name_u; no name_v)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is None or version < 1:
            key = prefix + fn.name
            if version is None and all(key + s in state_dict for s in ("_orig", "_u", "_v")) \
                    and key not in state_dict:
                return
            missing = False
            for suffix in ("_orig", "", "_u"):
                if key + suffix not in state_dict:
                    missing = True
                    if strict:
                        missing_keys.append(key + suffix)
            if missing:
                return
            with no_grad():
                weight_orig = state_dict[key + "_orig"]
                weight = state_dict.pop(key)
                sigma = (weight_orig / weight).mean()
                mat = fn.reshape_weight_to_matrix(weight_orig)
                state_dict[key + "_v"] = fn._solve_v_and_rescale(mat, state_dict[key + "_u"],
                                                                  sigma)


class SpectralNormStateDictHook:
    """Records the hook's version in the state_dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Normalize module.<name> by its spectral norm (dim 1 for transposed convolutions)."""
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # nn is loaded
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the normalization back into one parameter and drop the hooks."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for hooks, cls in ((module._state_dict_hooks, SpectralNormStateDictHook),
                       (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook)):
        for k, hook in list(hooks.items()):
            if isinstance(hook, cls) and hook.fn.name == name:
                del hooks[k]
                break
    return module
