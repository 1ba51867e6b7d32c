"""The command line (``c4table``): :mod:`~c4table.cli.main` sets up the process and holds the
build commands; the readers' commands are in :mod:`~c4table.cli.use`, ``.c4z`` in
:mod:`~c4table.cli.c4z`, ``serve`` in :mod:`~c4table.cli.serve`, BDD mode in
:mod:`~c4table.cli.bdd`."""
