"""load(weights_only=True): an unpickler that can only build what a checkpoint holds.

A port of torch/_weights_only_unpickler.py, PyTorch's reference: the opcodes of protocol 2
(and the few of later protocols a checkpoint uses) read one by one; a GLOBAL resolves only
through the allowlist (_rebuild.py's allowed_globals, plus what the program allowed with
torch.serialization.add_safe_globals), never by importing; REDUCE and NEWOBJ call only
allowlisted objects; BUILD sets state only on a Parameter, an OrderedDict or an allowlisted
class; APPEND(S) only on lists, SETITEM(S) only on dicts; a persistent id only names a
storage. Nothing in the file can run code. Any failure, a refused global or a corrupt
stream alike, is a pickle.UnpicklingError saying what was wrong."""
import collections
import pickle
import struct
from pickle import UnpicklingError

from .. import _C
from ._rebuild import MissingDTypeError, allowed_globals

_BLOCKED_MODULES = ("sys", "os", "posix", "nt", "subprocess", "builtins.eval")
_NAME_MAPPING = {("__builtin__", "set"): ("builtins", "set"),
                 ("__builtin__", "bytearray"): ("builtins", "bytearray"),
                 ("__builtin__", "complex"): ("builtins", "complex")}
_IMPORT_MAPPING = {"__builtin__": "builtins", "copy_reg": "copyreg"}

# (module, qualname) -> object: what the program allowed (torch.serialization.add_safe_globals)
USER_SAFE = {}


def _user_allowed():
    return {f"{m}.{n}": obj for (m, n), obj in USER_SAFE.items()}


def _refuse_message(full_path):
    return (f"Weights only load failed (weights_only=True, the default as in PyTorch 2.6). "
            f"Unsupported global: GLOBAL {full_path} was not an allowed global by default: "
            f"unpickling an arbitrary class can run arbitrary code. If you trust this file, load it with "
            f"weights_only=False (it can then run any code the file holds); or allow this "
            f"global with torch.serialization.add_safe_globals([{full_path}]) (pygpu."
            f"serialization.add_safe_globals) or the safe_globals([...]) context manager. "
            "To need no trust, save model.state_dict() instead of the model.")


class WeightsOnlyUnpickler:
    def __init__(self, file, persistent_load):
        self.read, self.readline = file.read, file.readline
        self.persistent_load = persistent_load
        self.memo = {}

    def _exact(self, n):
        data = self.read(n)
        if len(data) != n:
            raise UnpicklingError("pickle data was truncated")
        return data

    def load(self):
        try:
            return self._load()
        except (UnpicklingError, MissingDTypeError):
            raise
        except (IndexError, KeyError, EOFError, struct.error, UnicodeDecodeError,
                ValueError, TypeError, RecursionError, MemoryError) as e:
            raise UnpicklingError(f"Weights only load failed: the pickle is corrupt or not a "
                                  f"checkpoint ({type(e).__name__}: {e})") from None

    def _load(self):
        allowed, user = allowed_globals(), _user_allowed()
        allowed_values = list(allowed.values()) + list(user.values())

        def is_allowed(obj):
            return any(obj is v for v in allowed_values)

        self.metastack, self.stack = [], []
        read = self._exact
        from ..nn.parameter import Parameter
        while True:
            stack = self.stack
            key = self.read(1)
            if not key:
                raise EOFError("the pickle ends before its STOP opcode")
            op = key[0]
            if op == pickle.GLOBAL[0]:
                module = self.readline()[:-1].decode("utf-8")
                name = self.readline()[:-1].decode("utf-8")
                if (module, name) in _NAME_MAPPING:
                    module, name = _NAME_MAPPING[(module, name)]
                elif module in _IMPORT_MAPPING:
                    module = _IMPORT_MAPPING[module]
                full = f"{module}.{name}"
                if module.split(".")[0] in _BLOCKED_MODULES:
                    raise UnpicklingError(f"Weights only load failed. Trying to load "
                                          f"unsupported GLOBAL {full} whose module {module} "
                                          "is blocked.")
                if full in allowed:
                    stack.append(allowed[full])
                elif full in user:
                    stack.append(user[full])
                else:
                    raise UnpicklingError(_refuse_message(full))
            elif op == pickle.NEWOBJ[0]:
                args = stack.pop()
                cls = stack.pop()
                if cls is Parameter:
                    stack.append(Parameter(*args))
                elif is_allowed(cls) and isinstance(cls, type):
                    stack.append(cls.__new__(cls, *args))
                else:
                    raise UnpicklingError("Weights only load failed. Can only create new object "
                                          "for nn.Parameter or classes allowlisted via "
                                          f"add_safe_globals, but got {cls!r}")
            elif op == pickle.REDUCE[0]:
                args = stack.pop()
                func = stack[-1]
                if not is_allowed(func) or not callable(func):
                    raise UnpicklingError(f"Weights only load failed. Trying to call reduce for "
                                          f"unrecognized function {func!r}")
                if not isinstance(args, tuple):
                    raise UnpicklingError("REDUCE's arguments are not a tuple")
                stack[-1] = func(*args)
            elif op == pickle.BUILD[0]:
                state = stack.pop()
                inst = stack[-1]
                if isinstance(inst, _C.Tensor) and inst._is_param:
                    from ._rebuild import _set_state
                    _set_state(inst, state)
                elif type(inst) is collections.OrderedDict:
                    if not isinstance(state, dict):
                        raise UnpicklingError("an OrderedDict's state is not a dict")
                    inst.__dict__.update(state)
                elif is_allowed(type(inst)) and type(inst) not in (dict, list, set, tuple):
                    if hasattr(inst, "__setstate__"):
                        inst.__setstate__(state)
                    else:
                        slotstate = None
                        if isinstance(state, tuple) and len(state) == 2:
                            state, slotstate = state
                        if state:
                            inst.__dict__.update(state)
                        if slotstate:
                            for k, v in slotstate.items():
                                setattr(inst, k, v)
                else:
                    raise UnpicklingError("Weights only load failed. Can only build Tensor, "
                                          "Parameter, OrderedDict or types allowlisted via "
                                          f"add_safe_globals, but got {type(inst)}")
            elif op == pickle.APPEND[0]:
                item = stack.pop()
                if type(stack[-1]) is not list:
                    raise UnpicklingError(f"Can only append to lists, but got {type(stack[-1])}")
                stack[-1].append(item)
            elif op == pickle.APPENDS[0]:
                items = self._pop_mark()
                if type(self.stack[-1]) is not list:
                    raise UnpicklingError(f"Can only extend lists, but got {type(self.stack[-1])}")
                self.stack[-1].extend(items)
            elif op == pickle.SETITEM[0]:
                v, k = stack.pop(), stack.pop()
                self._check_set_item_target("SETITEM")
                stack[-1][k] = v
            elif op == pickle.SETITEMS[0]:
                items = self._pop_mark()
                self._check_set_item_target("SETITEMS")
                if len(items) % 2:
                    raise UnpicklingError("SETITEMS with an odd number of items")
                for i in range(0, len(items), 2):
                    self.stack[-1][items[i]] = items[i + 1]
            elif op == pickle.ADDITEMS[0]:
                items = self._pop_mark()
                if type(self.stack[-1]) is not set:
                    raise UnpicklingError(f"Can only add to sets, but got {type(self.stack[-1])}")
                self.stack[-1].update(items)
            elif op == pickle.MARK[0]:
                self.metastack.append(self.stack)
                self.stack = []
            elif op == pickle.TUPLE[0]:
                items = self._pop_mark()
                self.stack.append(tuple(items))
            elif op == pickle.TUPLE1[0]:
                stack[-1] = (stack[-1],)
            elif op == pickle.TUPLE2[0]:
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == pickle.TUPLE3[0]:
                stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
            elif op == pickle.NONE[0]:
                stack.append(None)
            elif op == pickle.NEWFALSE[0]:
                stack.append(False)
            elif op == pickle.NEWTRUE[0]:
                stack.append(True)
            elif op == pickle.EMPTY_TUPLE[0]:
                stack.append(())
            elif op == pickle.EMPTY_LIST[0]:
                stack.append([])
            elif op == pickle.EMPTY_DICT[0]:
                stack.append({})
            elif op == pickle.EMPTY_SET[0]:
                stack.append(set())
            elif op == pickle.BININT[0]:
                stack.append(struct.unpack("<i", read(4))[0])
            elif op == pickle.BININT1[0]:
                stack.append(read(1)[0])
            elif op == pickle.BININT2[0]:
                stack.append(struct.unpack("<H", read(2))[0])
            elif op == pickle.BINFLOAT[0]:
                stack.append(struct.unpack(">d", read(8))[0])
            elif op == pickle.BINUNICODE[0]:
                n = struct.unpack("<I", read(4))[0]
                stack.append(str(read(n), "utf-8", "surrogatepass"))
            elif op == pickle.SHORT_BINUNICODE[0]:
                n = read(1)[0]
                stack.append(str(read(n), "utf-8", "surrogatepass"))
            elif op == pickle.SHORT_BINSTRING[0]:
                n = read(1)[0]
                stack.append(read(n).decode("ascii"))
            elif op == pickle.SHORT_BINBYTES[0]:
                stack.append(read(read(1)[0]))
            elif op == pickle.BINBYTES[0]:
                stack.append(read(struct.unpack("<I", read(4))[0]))
            elif op == pickle.BINPERSID[0]:
                pid = stack.pop()
                if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
                    raise UnpicklingError(f"Only persistent_load of storage is allowed, but got "
                                          f"{pid!r:.80}")
                stack.append(self.persistent_load(pid))
            elif op in (pickle.BINGET[0], pickle.LONG_BINGET[0]):
                idx = read(1)[0] if op == pickle.BINGET[0] else struct.unpack("<I", read(4))[0]
                stack.append(self.memo[idx])
            elif op in (pickle.BINPUT[0], pickle.LONG_BINPUT[0]):
                idx = read(1)[0] if op == pickle.BINPUT[0] else struct.unpack("<I", read(4))[0]
                self.memo[idx] = stack[-1]
            elif op == pickle.MEMOIZE[0]:
                self.memo[len(self.memo)] = stack[-1]
            elif op == pickle.LONG1[0]:
                n = read(1)[0]
                stack.append(pickle.decode_long(read(n)))
            elif op == pickle.PROTO[0]:
                read(1)
            elif op == pickle.FRAME[0]:
                read(8)
            elif op == pickle.STOP[0]:
                return stack.pop()
            else:
                raise UnpicklingError(f"Weights only load failed. Unsupported operand {op} "
                                      f"({bytes([op])!r})")

    def _pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                  f"collections.Counter, but got {type(self.stack[-1])}")
