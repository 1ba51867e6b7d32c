"""Bytes in and out: the storage a build directory lives on (:mod:`~c4table.io.storage`, local
or any ``pyarrow.fs`` URI), request counting (:mod:`~c4table.io.counting`), the recycle bin of
spent scratch files (:mod:`~c4table.io.recycle`), local files around the page cache
(:mod:`~c4table.io.files`) and table hashes (:mod:`~c4table.io.hashes`)."""
