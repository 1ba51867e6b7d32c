"""The build (installed as ``c4table.pipeline``): the forward pass (:mod:`.forward`), the backward
pass (:mod:`.backward`), the final merge (:mod:`.merge`), the external sort (:mod:`.extsort`) and
the shuffle (:mod:`.shuffle`) they use, the numba kernels (:mod:`.kernels`, :mod:`.kernels3d`),
the execution of tasks (:mod:`.execution`), resources and plans (:mod:`.resources`,
:mod:`.plan`), and the driver that runs the stages as resumable steps (:mod:`.build`)."""
