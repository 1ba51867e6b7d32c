"""The board and its rules: geometry and column codes (:mod:`~c4table.game.board`), the 3D board
variant (:mod:`~c4table.game.board3d`, registered here), keys and
outcome bytes (:mod:`~c4table.game.codec`), positions and moves (:mod:`~c4table.game.rules`),
drawings (:mod:`~c4table.game.drawing`), 3D grids (:mod:`~c4table.game.grid3d`), roots of
rooted tables (:mod:`~c4table.game.root`) and the numba line kernels readers and the build
share (:mod:`~c4table.game.lines`, :mod:`~c4table.game.lines3d`). Imports nothing of c4table
but :mod:`c4table.errors` and :mod:`c4table.wording`."""

from c4table.game import board3d  # noqa: E402,F401 - registers the 3D variant
