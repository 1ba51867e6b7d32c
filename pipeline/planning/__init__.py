"""Plans and models of a build, which the build itself never imports: the plan (:mod:`.plan`,
:mod:`.plan3d`, :mod:`.gpuplan`; which one a board variant gets: :mod:`.planners`), the I/O and size models (:mod:`.iomodel`, :mod:`.c4zsize`),
the schedule model (:mod:`.schedule`) and the calibration (:mod:`.calibrate`)."""
