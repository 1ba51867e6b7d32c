"""The build (installed as ``c4table.pipeline``), grouped by role: the stages (:mod:`.stages`),
sorting and shuffling (:mod:`.sort`), the numba kernels (:mod:`.kernels`), the execution of tasks
(:mod:`.runtime`) and the plans and models (:mod:`.planning`), which the build never imports."""
