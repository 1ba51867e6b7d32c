"""The build on one GPU (``--device gpu``): the array-module seam and kernel launches
(:mod:`c4table.pipeline.kernels.gpu.device`), the kernels' per-key bodies written once for numba's CPU
and CUDA targets (:mod:`c4table.pipeline.kernels.gpu.kernels`) and their CUDA launches
(:mod:`c4table.pipeline.kernels.gpu.launch`). The plan of a GPU build is a sibling module,
:mod:`c4table.pipeline.planning.gpuplan` (it needs the CPU plan, which needs the stages that import this
package). docs/gpu.md describes the design."""
