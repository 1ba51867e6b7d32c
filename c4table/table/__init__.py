"""Reading tables: the entry-source protocol every reader implements
(:class:`~c4table.table.source.Table`), the memory-mapped ``.dat`` reader
(:class:`~c4table.table.dat.DatTable`), probes and their JSON (:mod:`~c4table.table.probe`),
batch probing (:mod:`~c4table.table.fastprobe`), the checks made at open
(:mod:`~c4table.table.check`) and the known tables (:mod:`~c4table.table.known`). The ``.c4z``
reader is :mod:`c4table.c4z`; :func:`c4table.open_table` chooses between them."""
