"""The ``.c4z`` container: a table compressed in blocks that can still be probed in place,
locally or over ranged reads. The format and its constants: :mod:`~c4table.c4z.format`; the
outcome-symbol transform: :mod:`~c4table.c4z.codec`; blocks: :mod:`~c4table.c4z.blocks`
(format 3), :mod:`~c4table.c4z.rulecodec` (format 4, its keys: :mod:`~c4table.c4z.rulekeys`) and
:mod:`~c4table.c4z.framecodec` (format 5); the
block codecs by name: :mod:`~c4table.c4z.registry`; where bytes come from:
:mod:`~c4table.c4z.sources`; reading: :mod:`~c4table.c4z.reader`; the table view:
:mod:`~c4table.c4z.table`; compress and decompress: :mod:`~c4table.c4z.writer` (of a stream:
:mod:`~c4table.c4z.stream`; of another ``.c4z``: :mod:`~c4table.c4z.recode`; the block writer
every writer shares: :mod:`~c4table.c4z.blockwriter`).

The names most callers need are importable from here."""
from c4table.c4z.blocks import (decode_block_bytes, default_part_entries, encode_block, rows_of,  # noqa: F401
                                split_block, train_dicts, train_key_dict, tune_malloc)
from c4table.c4z import rulecodec  # noqa: F401  (registers format 4's block codec)
from c4table.c4z import framecodec  # noqa: F401  (registers format 5's block codec)
from c4table.c4z.format import *  # noqa: F401,F403
from c4table.c4z.format import is_c4z, default_c4z_name  # noqa: F401
from c4table.c4z.reader import C4zFile, RawStream, open_c4z  # noqa: F401
from c4table.c4z.registry import codec_names, get_codec, has_frames, register_codec  # noqa: F401
from c4table.c4z.sources import ArrowSource, HttpSource, LocalSource, cache_dir, open_source  # noqa: F401
from c4table.c4z.table import C4zTable, NotMappedError  # noqa: F401
from c4table.c4z.writer import compress_table, decompress_table  # noqa: F401
