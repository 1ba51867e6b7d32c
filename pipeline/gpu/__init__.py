"""The build on one GPU (``--device gpu``): the array-module seam and kernel launches
(:mod:`c4table.pipeline.gpu.device`), the kernels' per-key bodies written once for numba's CPU
and CUDA targets (:mod:`c4table.pipeline.gpu.kernels`), and the plan of a GPU build
(:mod:`c4table.pipeline.gpu.plan`). docs/gpu.md describes the design."""
