"""The C library through ctypes: where libheadscope.so is found, the entry
points of capi/headscope.h with their argument types, and the one error path.

The library is looked for, in this order:

1. ``$HEADSCOPE_LIB``, a path to a ``libheadscope.so``;
2. the CMake build folder the package was installed from (recorded by
   ``pip install ./python`` in ``headscope/_build.py``), so a rebuild there is
   picked up without reinstalling;
3. the copy ``pip install`` put inside the package (the package keeps working
   when the build folder is gone);
4. ``build/`` of the repository around this file (running from the source tree
   without installing).

ctypes releases the GIL during every call into the library, and takes it again
for a Python hook the library calls back.

OpenBLAS kernels. Debian 12's OpenBLAS does not know CPUs newer than it and
falls back to SSE3 kernels (4.4x slower, other bits); the CLI restarts itself
with OPENBLAS_CORETYPE set (hs_blas_core_advice). OpenBLAS reads the variable
once, when it loads, so this module sets it before the library (and OpenBLAS)
loads, when the process has not loaded OpenBLAS yet and the user has not set
it: a child Python asks the library for the advice. A process that loaded
OpenBLAS before (numpy imported before headscope) keeps its kernels and gets a
warning saying what to do.
"""
import ctypes
import os
import subprocess
import sys
import warnings

from .errors import HeadscopeError

_LIB_NAME = "libheadscope.so"


class HsError(ctypes.Structure):
    """hs_error: the status and the library's one-line message."""
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


HOOK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                           ctypes.POINTER(ctypes.c_float), ctypes.c_void_p)


def _candidates():
    env = os.environ.get("HEADSCOPE_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    try:
        from . import _build
        out.append(os.path.join(_build.BUILD_DIR, _LIB_NAME))
    except ImportError:
        pass
    out.append(os.path.join(here, _LIB_NAME))
    out.append(os.path.join(here, "..", "..", "build", _LIB_NAME))
    return out


_ADVICE = ("import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); l.hs_blas_core_advice.restype = ctypes.c_char_p; "
           "print((l.hs_blas_core_advice() or b'').decode())")


def _openblas_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any("openblas" in line for line in f)
    except OSError:
        return False


def _set_blas_core(path):
    """OPENBLAS_CORETYPE <- the library's advice, before OpenBLAS loads here."""
    if "OPENBLAS_CORETYPE" in os.environ or _openblas_loaded():
        return
    try:
        r = subprocess.run([sys.executable, "-c", _ADVICE, path], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return
    core = r.stdout.strip()
    if r.returncode == 0 and core.isalnum():
        os.environ["OPENBLAS_CORETYPE"] = core


def _open():
    tried = []
    for path in _candidates():
        if os.path.isfile(path):
            _set_blas_core(os.path.abspath(path))
            return ctypes.CDLL(os.path.abspath(path)), os.path.abspath(path)
        tried.append(path)
    raise ImportError("headscope: libheadscope.so not found (looked at %s); build it with "
                      "`BUILD=build bash scripts/build.sh` and `pip install ./python`, or set HEADSCOPE_LIB"
                      % ", ".join(tried))


lib, LIB_PATH = _open()

_P = ctypes.c_void_p
_S = ctypes.c_char_p
_I = ctypes.c_int
_E = ctypes.POINTER(HsError)
_SIGS = {
    "hs_api_mem_free": (None, [_P]),
    "hs_blas_core": (_S, []),
    "hs_blas_core_advice": (_S, []),
    "hs_api_error_size": (ctypes.c_size_t, []),
    "hs_api_load": (_I, [_S, _S, _I, ctypes.POINTER(_P), _E]),
    "hs_api_free": (None, [_P]),
    "hs_api_notes": (_S, [_P]),
    "hs_api_config_json": (_S, [_P]),
    "hs_api_n_hook_points": (_I, [_P]),
    "hs_api_hook_point": (_S, [_P, _I]),
    "hs_api_n_tensors": (_I, [_P]),
    "hs_api_tensor_name": (_S, [_P, _I]),
    "hs_api_tensor_shape": (_I, [_P, _S, ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_int64), _E]),
    "hs_api_tensor_copy": (_I, [_P, _S, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, _E]),
    "hs_api_encode": (_I, [_P, _S, _I, ctypes.POINTER(ctypes.POINTER(_I)), ctypes.POINTER(ctypes.c_size_t), _E]),
    "hs_api_token_str": (_S, [_P, _I]),
    "hs_api_decode": (_I, [_P, ctypes.POINTER(_I), ctypes.c_size_t, ctypes.POINTER(_P), _E]),
    "hs_api_bos": (_I, [_P]),
    "hs_api_d_vocab": (_I, [_P]),
    "hs_api_acts_create": (_I, [_P, _I, _I, ctypes.POINTER(_P), _E]),
    "hs_api_acts_free": (None, [_P]),
    "hs_api_cache_n": (_I, [_P]),
    "hs_api_cache_name": (_S, [_P, _I]),
    "hs_api_cache_ndim": (_I, [_P, _I]),
    "hs_api_cache_shape": (ctypes.POINTER(ctypes.c_int64), [_P, _I]),
    "hs_api_cache_data": (_P, [_P, _I]),
    "hs_api_cache_free": (None, [_P]),
    "hs_api_run": (_I, [_P, _P, ctypes.POINTER(ctypes.c_int64), _I, _I, ctypes.POINTER(_S), _I,
                        ctypes.POINTER(_S), _I, HOOK_FN, ctypes.POINTER(_P), _P, ctypes.POINTER(_P), _E]),
    "hs_api_figure_attention": (_I, [ctypes.POINTER(ctypes.c_float), _I, _I, _I, ctypes.POINTER(_S), _I, _S,
                                     ctypes.c_double, ctypes.c_double, ctypes.POINTER(_P), _E]),
    "hs_api_figure_bars": (_I, [ctypes.POINTER(ctypes.c_float), _I, ctypes.POINTER(_S), _S, _S, _S, _I, ctypes.c_double,
                                ctypes.c_double, ctypes.POINTER(_P), _E]),
    "hs_api_figure_heatmap": (_I, [ctypes.POINTER(ctypes.c_float), _I, _I, ctypes.POINTER(_S), ctypes.POINTER(_S),
                                   _S, _S, _S, _I, ctypes.c_double, _S, _S, ctypes.c_double, ctypes.c_double,
                                   ctypes.POINTER(_P), _E]),
    "hs_api_figure_circuit": (_I, [_P, _S, _S, ctypes.c_double, ctypes.c_double, ctypes.POINTER(_I),
                                   ctypes.POINTER(_P), _E]),
    "hs_api_figure_save": (_I, [_P, _S, _E]),
    "hs_api_figure_size": (None, [_P, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
                                  ctypes.POINTER(ctypes.c_double)]),
    "hs_api_figure_free": (None, [_P]),
    "hs_api_ioi": (_I, [_P, _I, ctypes.c_uint64, _I, _I, ctypes.POINTER(_P), _E]),
    "hs_api_experiment": (_I, [_P, _S, _S, _S, _S, ctypes.POINTER(_S), ctypes.POINTER(_S), _I,
                               ctypes.POINTER(_P), _E]),
}
for _name, (_res, _args) in _SIGS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.hs_api_error_size() != ctypes.sizeof(HsError):
    raise ImportError("headscope: %s's hs_error is %d bytes, this package expects %d: the library and the "
                      "package are from different versions" % (LIB_PATH, lib.hs_api_error_size(),
                                                                ctypes.sizeof(HsError)))

BLAS_CORE = lib.hs_blas_core().decode()
_advice = lib.hs_blas_core_advice()
if _advice:
    warnings.warn("headscope: OpenBLAS runs its %s kernels on this CPU, older than the %s ones the headscope CLI "
                  "runs: products are slower and may differ from the CLI's in the last bits. OpenBLAS was loaded "
                  "before headscope (import headscope before numpy), or start Python with "
                  "OPENBLAS_CORETYPE=%s." % (BLAS_CORE, _advice.decode(), _advice.decode()), RuntimeWarning,
                  stacklevel=2)


def call(fn, *args):
    """Calls fn(*args, err) and raises HeadscopeError with the library's line
    when it returns a failure."""
    err = HsError()
    st = fn(*args, ctypes.byref(err))
    if st != 0:
        raise HeadscopeError(err.msg.decode("utf-8", "replace"), st)


def enc(s):
    """A str as the NUL-terminated UTF-8 the library reads; a str holding a NUL
    is refused (C cannot carry it)."""
    if not isinstance(s, str):
        raise HeadscopeError("expected a string, got %s" % type(s).__name__)
    if "\0" in s:
        raise HeadscopeError("a string holding a NUL character cannot be passed to the library")
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise HeadscopeError("text is not valid Unicode (%s)" % e) from None


def str_array(items):
    """A (char *) array of the encoded strings (kept alive by the returned tuple)."""
    b = [enc(s) for s in items]
    arr = (ctypes.c_char_p * max(1, len(b)))(*b)
    return arr, b
