"""Hand memory freed after a ① burst back to the kernel: glibc keeps freed heap pages for reuse otherwise.

The box's memory cgroup counts what the process holds, not what it uses: after twelve ①
inferences at once, the activations they freed stay in glibc's per-thread heaps (and in
onnxruntime's arena, see `RerankerModel(memory=...)`) and the next student starts near the cap.
"""

import ctypes
import ctypes.util
import sys
from functools import cache


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None  # musl has none


def malloc_trim() -> bool:
    """Return free heap pages to the kernel (glibc `malloc_trim(0)`); False where there is no such call."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
