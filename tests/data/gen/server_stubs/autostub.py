"""Import-time stand-ins for the servers' heavy dependencies (torch, CUDA kernels, ...).

vLLM and SGLang import torch, triton, CUDA extensions, ZMQ and friends at module level, also in
modules whose code we run only for their parsers, detokenizers and response assembly. None of
that code touches a tensor or a GPU on the paths we drive (text in, JSON out), so every such
module is replaced by an *inert* module: any attribute is a `_Stub` class that can be called,
subclassed, indexed, compared, used as a decorator or a type annotation, and does nothing.

If a path we drive ever did real work through a stub, the result would be a `_Stub` instance in
a response, which `make_server_corpus.py` rejects (it asserts every emitted JSON value is plain
JSON) — so a stub can make the script fail, never make it silently produce a different answer.
"""

from __future__ import annotations

import abc
import importlib.abc
import importlib.machinery
import sys
import types


class _StubMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make(f"{cls.__name__}.{name}")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __call__(cls, *args, **kwargs):
        # Used as a decorator (`@torch.inference_mode()`, `@triton.jit`): hand the function back.
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _StubMeta):
            return args[0]
        return super().__call__()

    def __iter__(cls):
        return iter(())

    def __contains__(cls, item):
        return False

    def __len__(cls):
        return 0

    def __bool__(cls):
        return False

    def __int__(cls):
        return 0

    def __index__(cls):
        return 0

    def __lt__(cls, o):
        return False

    __le__ = __gt__ = __ge__ = __lt__


    def __add__(cls, o):
        return cls

    def __radd__(cls, o):
        return o

    __sub__ = __mul__ = __truediv__ = __floordiv__ = __mod__ = __pow__ = __add__
    __rsub__ = __rmul__ = __rtruediv__ = __rand__ = __add__

    def __neg__(cls):
        return cls

    def __hash__(cls):
        return id(cls)

    def __eq__(cls, o):
        return cls is o

    def __mro_entries__(cls, bases):
        return (cls,)


class _Stub(metaclass=_StubMeta):
    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make(name)

    def __call__(self, *a, **k):
        return _Stub()

    def __add__(self, o):
        return self

    def __radd__(self, o):
        return o

    __sub__ = __mul__ = __truediv__ = __floordiv__ = __mod__ = __pow__ = __add__
    __rsub__ = __rmul__ = __rtruediv__ = __rand__ = __add__

    def __hash__(self):
        return id(self)

    def __eq__(self, o):
        return self is o

    def __iter__(self):
        return iter(())

    def __contains__(self, item):
        return False

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_cache: dict[str, type] = {}


def _make(name: str) -> type:
    if name not in _cache:
        _cache[name] = _StubMeta(name, (_Stub,), {"__module__": "autostub"})
    return _cache[name]


# Device back ends probed with `hasattr(torch, ...)`: absent, as on a CPU-only torch build.
ABSENT = {"npu", "xpu", "hpu", "musa", "mlu", "sdaa", "_npu"}


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if (name.startswith("__") and name.endswith("__")) or name in ABSENT:
            raise AttributeError(name)
        full = f"{self.__name__}.{name}"
        if full in sys.modules:
            return sys.modules[full]
        value = _make(full)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots):
        self.roots = set(roots)

    def find_spec(self, fullname, path, target=None):
        if any(fullname == r or fullname.startswith(r + ".") for r in self.roots):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0+stub"
        return module

    def exec_module(self, module):
        pass


STUBBED: list[str] = []


def install(roots) -> None:
    """Make every module under the given top-level names an inert stub, and its distribution
    invisible to `importlib.metadata` (so libraries that probe for, say, an installed torch see
    the machine without it, whatever else is installed here)."""
    import importlib.metadata as metadata

    STUBBED.extend(r for r in roots if r not in STUBBED)
    sys.meta_path.insert(0, _Finder(roots))
    if getattr(metadata, "_autostub_patched", False):
        return
    version, distribution = metadata.version, metadata.distribution

    def hidden(name: str) -> bool:
        top = name.replace("-", "_").split(".")[0]
        return top in STUBBED

    def stub_version(name):
        if hidden(name):
            raise metadata.PackageNotFoundError(name)
        return version(name)

    def stub_distribution(name):
        if hidden(name):
            raise metadata.PackageNotFoundError(name)
        return distribution(name)

    metadata.version, metadata.distribution = stub_version, stub_distribution
    metadata._autostub_patched = True


def is_stub(value) -> bool:
    return isinstance(value, _Stub) or isinstance(value, _StubMeta)
