"""The shards of a build directory as Arrow tables (``pyarrow.Table``), for users who want a
generation's entries: the schema of a forward shard (``key``) and of a backward shard (``key``,
``outcome``: the outcome byte of Cadot's table, as the shard holds it), and one shard read into
its table, checked (xxh64, row count) before any row is used.

The shards on disk are not Arrow or parquet files but varint + zstd frames
(:mod:`~c4table.builddir.shards`, docs/architecture.md says why); this module is only the view.
:class:`~c4table.builddir.reader.BuildDir` hands the tables out (``generation``,
``shard_tables``).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from c4table.builddir.shards import ShardInfo, read_shard
from c4table.io.storage import Storage

STAGES = ("forward", "backward")
FORWARD = pa.schema([pa.field("key", pa.uint64(), nullable=False)])
BACKWARD = pa.schema([pa.field("key", pa.uint64(), nullable=False),
                      pa.field("outcome", pa.uint8(), nullable=False)])
SCHEMAS = {"forward": FORWARD, "backward": BACKWARD}


def shard_table(store: Storage, info: ShardInfo, stage: str) -> pa.Table:
    """The shard ``info`` of ``stage`` as a table of :data:`SCHEMAS` ``[stage]``."""
    if stage == "forward":
        keys = read_shard(store, info)
        return pa.Table.from_arrays([pa.array(np.asarray(keys, np.uint64))], schema=FORWARD)
    keys, outs = read_shard(store, info, with_outcome=True)
    return pa.Table.from_arrays([pa.array(np.asarray(keys, np.uint64)),
                                 pa.array(np.asarray(outs, np.uint8))], schema=BACKWARD)


def empty(stage: str) -> pa.Table:
    """A table of ``stage``'s schema with no rows (a generation with no entries)."""
    return SCHEMAS[stage].empty_table()
