"""The CUDA kernels of the GPU path: each one calls its ``@njit`` body of
:mod:`c4table.pipeline.kernels.gpu.kernels` on the keys ``cuda.grid(1)::cuda.gridsize(1)`` (a
grid-stride loop). Imported on first use (numba.cuda is not loaded by a CPU build).

Under numba-cuda's simulator a kernel receives wrapped arrays; :func:`raw` hands the bodies the
numpy arrays inside (on a GPU it is the identity)."""
from __future__ import annotations

from numba import config, cuda

from c4table.pipeline.kernels.gpu import kernels as gk

if getattr(config, "ENABLE_CUDASIM", 0):
    def raw(a):
        return a._item._ary if hasattr(a, "_item") else a
else:
    @cuda.jit(device=True)
    def raw(a):
        return a


@cuda.jit
def expand_kernel(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
                  out, stats):
    gk.expand_range(raw(keys), ply, w, stride, k, base, cells, raw(child_code), raw(bits_a),
                    raw(bits_b), raw(powers), raw(out), raw(stats),
                    cuda.grid(1), cuda.gridsize(1))


@cuda.jit
def resolve_kernel(keys, msgs, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                   powers, parent_code, top_owner, out, emitted, stats, bad):
    gk.resolve_range(raw(keys), raw(msgs), ply, w, stride, k, base, cells, raw(child_code),
                     raw(bits_a), raw(bits_b), raw(powers), raw(parent_code), raw(top_owner),
                     raw(out), raw(emitted), raw(stats), raw(bad),
                     cuda.grid(1), cuda.gridsize(1))


@cuda.jit
def emit_kernel(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                powers, parent_code, top_owner, emitted):
    gk.emit_range(raw(keys), raw(outcomes), ply, w, stride, k, base, cells, raw(child_code),
                  raw(bits_a), raw(bits_b), raw(powers), raw(parent_code), raw(top_owner),
                  raw(emitted), cuda.grid(1), cuda.gridsize(1))
