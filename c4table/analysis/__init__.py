"""What is done with a table: verification (:mod:`~c4table.analysis.verify`), per-ply statistics
(:mod:`~c4table.analysis.stats`), export to parquet (:mod:`~c4table.analysis.export`, decoding
in :mod:`~c4table.analysis.decode`, quiet positions in :mod:`~c4table.analysis.quiet`) and play
against the table (:mod:`~c4table.analysis.play`)."""
