"""The numba kernels: the 2D board's (:mod:`.cpu`), the 3D board's (:mod:`.cpu3d`), the GPU's
(:mod:`.gpu`) and the choice of a board's kernel set (:mod:`.kernelset`)."""
