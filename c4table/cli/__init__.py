"""The command line (``c4table``): :mod:`~c4table.cli.main` sets up the process, wires the
commands into one group and maps errors to exit codes; one module per command family:
:mod:`~c4table.cli.build` (build, forward, backward, merge), :mod:`~c4table.cli.plan`,
:mod:`~c4table.cli.lookup` (lookup, best, play), :mod:`~c4table.cli.verify`,
:mod:`~c4table.cli.stats`, :mod:`~c4table.cli.export`, :mod:`~c4table.cli.label`,
:mod:`~c4table.cli.c4z` (compress, decompress), :mod:`~c4table.cli.serve`, BDD mode in
:mod:`~c4table.cli.bdd`; the options they share in :mod:`~c4table.cli.options`."""
