"""Command-line commands for ``.c4z`` tables: ``compress`` and ``decompress`` (see
:mod:`c4table.c4z`), and the ``--compress`` / ``--compress-only`` step of ``build`` and
``merge``.

Registered on the ``c4table`` group by :func:`c4table.cli.main._register_commands`; errors follow
:mod:`c4table.cli.main` (one line on stderr, exit status 2 for bad input, 1 for bad data).

>>> from click.testing import CliRunner
>>> CliRunner().invoke(compress, ["-q", "tables/4x4/connect4_4x4.dat", "-o", "cli44.c4z"]).output
'cli44.c4z  ... bytes (...% of 322,164)\\n'
"""
from __future__ import annotations

import os
from pathlib import Path

import click


def _threads_option(f):
    return click.option("--threads", type=click.IntRange(1, 1024), default=None,
                        help="compression threads (default: all cores)")(f)


@click.command(short_help="Compress a table into a .c4z that every reader takes")
@click.argument("table_path", metavar="TABLE.dat|DIR|TABLE.dat.xz|-|TABLE.c4z", type=click.Path(allow_dash=True))
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False), default=None,
              help="output file (default: TABLE.c4z beside the input)")
@click.option("--board", default=None, help="board of the table if its name does not say")
@click.option("--level", type=click.IntRange(1, 22), default=None,
              help="zstd level (default 19: about 7 MB of raw table per CPU-second; the "
                   "decoding speed does not depend on it)")
@click.option("--block-entries", type=click.IntRange(2, 1 << 26), default=None,
              help="entries per block (default 65,536): bigger blocks compress better and make "
                   "single probes slower")
@click.option("--archive", is_flag=True,
              help="distribution profile: 16,777,216-entry blocks with one symbol frame each "
                   "(about 2/3 of the default size; every reader still takes it, but a single "
                   "probe decodes a whole block: tens of milliseconds instead of about a hundred "
                   "microseconds)")
@click.option("--frame-entries", type=click.IntRange(1, 1 << 26), default=None,
              help="format 5: entries per outcome-symbol frame, the part of a block a single "
                   "probe decodes (default 16,384): 65,536 makes 7x5's file 0.91x the default's "
                   "and a probe's frame about 3.5x dearer (70 against 20 microseconds)")
@click.option("--codec", default=None, metavar="NAME",
              help="block codec by name (default rulekeys-frames-v5, format 5: the keys coded "
                   "by the rules of the game in short runs, the outcomes in small frames; "
                   "rulekeys-plysym-v4: format 4; varint-plysym-v3: format 3)")
@_threads_option
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def compress(table_path, out, board, level, block_entries, archive, frame_entries, codec, threads,
             quiet):
    """Compress a table file into a .c4z (blocks of sorted entries, zstd) that every reader
    (lookup, best, play, stats, export, verify, open_table) takes as it is. Streaming, on all
    cores; an interrupted run resumes when rerun with the same arguments.

    TABLE.dat.xz (Cadot's archive) or - (the raw table on standard input, with --board) is
    converted as it streams: the raw table never touches the disk, its entries and hashes
    are checked on the way, and the streaming profile (zstd level 9 and 262,144-entry blocks
    unless --level / --block-entries) keeps up with xz's decoding on a machine of many cores
    (on 2 cores format 5 costs about 3.5x the CPU of xz -dc, 2.6x its time; --codec
    varint-plysym-v3 2x the CPU, 1.4x the time, for 1.27x the bytes). Rerun after an
    interruption: the stream is read again up to the checkpoint (decoded and hashed, not
    compressed) and the run goes on.

    TABLE.c4z (any format that opens; a path or URI) is compressed again, into -o OUT.c4z,
    with --codec (default: format 5), --level, --block-entries or --archive: its blocks are
    decoded on threads and compressed as they come, never a raw copy on disk, and the raw
    bytes are checked against the sha256 its header records. It resumes like a .dat."""
    from c4table import c4z
    from c4table.c4z.stream import is_stream_input
    from c4table.errors import TableError
    codec = codec or c4z.DEFAULT_CODEC
    try:
        cls = c4z.get_codec(codec)      # an unknown name: one line, before anything is read
    except TableError as e:
        raise click.BadParameter(str(e), param_hint="--codec") from None
    if frame_entries is not None:
        if archive:
            raise click.UsageError("--archive sets the symbol frames to its blocks: give "
                                   "--frame-entries or --archive, not both")
        if not c4z.has_frames(cls):
            raise click.BadParameter(f"the block codec {codec} has no symbol frames (format 5 "
                                     "has)", param_hint="--frame-entries")
    if c4z.is_c4z(table_path):
        _recompress(table_path, out, board, level, block_entries, archive, codec, threads, quiet,
                    frame_entries)
        return
    if is_stream_input(table_path):
        from c4table.c4z.stream import STREAM_BLOCK_ENTRIES, STREAM_LEVEL, compress_stream
        if archive:
            raise click.UsageError("--archive is for a .dat on disk, not a stream")
        if table_path == "-" and board is None:
            raise click.UsageError("the raw table on standard input needs --board WxH")
        path = compress_stream(table_path, out, board=board, level=level or STREAM_LEVEL,
                               block_entries=block_entries or STREAM_BLOCK_ENTRIES,
                               threads=threads, quiet=quiet, codec=codec,
                               frame_entries=frame_entries)
        from c4table.c4z.reader import open_c4z
        with open_c4z(path) as z:
            raw = z.header["raw_bytes"]
        size = path.stat().st_size
        click.echo(f"{path}  {size:,} bytes ({100 * size / raw:.2f}% of {raw:,})")
        return
    from c4table.cli.options import table_or_build_dir
    src = Path(table_or_build_dir(table_path))   # DIR: the table of a build directory
    if not src.is_file():
        from c4table.errors import MissingTableError
        raise MissingTableError(f"{src}: no such table file")
    extra = {"frame_entries": frame_entries} if frame_entries else {}
    if archive:
        block_entries = block_entries or c4z.ARCHIVE_BLOCK_ENTRIES
        extra["part_entries"] = block_entries      # one part: a probe decodes the frames anyway
        if c4z.has_frames(c4z.get_codec(codec)):
            extra["frame_entries"] = block_entries
    path = c4z.compress_table(src, out, board=board, level=level or c4z.DEFAULT_LEVEL,
                              block_entries=block_entries or c4z.DEFAULT_BLOCK_ENTRIES,
                              threads=threads, quiet=quiet, hashes=_manifest_hashes(src),
                              root=_manifest_root(src), codec=codec, **extra)
    raw, size = src.stat().st_size, path.stat().st_size
    click.echo(f"{path}  {size:,} bytes ({100 * size / raw:.2f}% of {raw:,})")


def _recompress(src, out, board, level, block_entries, archive, codec, threads, quiet,
                frame_entries=None) -> None:
    """``compress TABLE.c4z -o OUT.c4z``: :func:`c4table.c4z.recode.recompress_c4z`."""
    from c4table import c4z
    from c4table.c4z.recode import recompress_c4z
    if out is None:
        raise click.UsageError("a .c4z input needs the output file (-o OUT.c4z): it is never "
                               "replaced in place")
    if board is not None:
        raise click.UsageError("--board is for a raw table; a .c4z records its board")
    extra = {"frame_entries": frame_entries} if frame_entries else {}
    if archive:
        block_entries = block_entries or c4z.ARCHIVE_BLOCK_ENTRIES
        extra["part_entries"] = block_entries
        if c4z.has_frames(c4z.get_codec(codec or c4z.DEFAULT_CODEC)):
            extra["frame_entries"] = block_entries
    path = recompress_c4z(src, out, level=level or c4z.DEFAULT_LEVEL,
                          block_entries=block_entries or c4z.DEFAULT_BLOCK_ENTRIES,
                          threads=threads, quiet=quiet, codec=codec, **extra)
    with c4z.open_c4z(path) as z:
        raw = z.header["raw_bytes"]
    size = path.stat().st_size
    click.echo(f"{path}  {size:,} bytes ({100 * size / raw:.2f}% of {raw:,})")


@click.command(short_help="Write the original .dat table of a .c4z")
@click.argument("c4z_path", metavar="TABLE.c4z", type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False), default=None,
              help="output file (default: the original file name, beside the input)")
@_threads_option
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def decompress(c4z_path, out, threads, quiet):
    """Write the original table of a .c4z (a path, s3:// or https:// URI) byte for byte,
    checking its sha256 and md5 against the header. Resumes an interrupted run."""
    from c4table.c4z.writer import decompress_table
    path = decompress_table(c4z_path, out, threads=threads, quiet=quiet)
    click.echo(f"{path}  {path.stat().st_size:,} bytes")


def _build_of(src: Path):
    """The checked build directory beside the table ``src`` whose finished table it is, or
    None (no manifest there, or one of another table). A damaged manifest is refused."""
    from c4table.builddir.reader import BuildDir
    bd = BuildDir.beside(src)
    return bd if bd is not None and bd.table is not None and bd.table.describes(src.name) else None


def _manifest_hashes(src: Path) -> dict | None:
    """The manifest's figures of the table ``src`` (sha256, md5), if the manifest beside it
    describes it: compressing then also checks the file against them."""
    bd = _build_of(src)
    return bd.table.figures() if bd is not None else None


def _manifest_root(src: Path):
    """The ``root`` (start position) the manifest beside ``src`` records for it, if any."""
    bd = _build_of(src)
    return bd.manifest.root_record() if bd is not None else None


def compressed_build_done(store, table_name: str) -> bool:
    """True if a local build directory holds a ``.c4z`` of its recorded table (same raw
    tree hash or sha256) and no raw table: a ``--compress-only`` build that is finished."""
    from c4table.builddir.manifest import MANIFEST
    from c4table.builddir.reader import BuildDir
    from c4table.c4z.format import default_c4z_name
    from c4table.c4z.reader import open_c4z
    from c4table.errors import C4Error
    if not store.local:
        return False
    root = store.root
    dat = root / table_name
    z = default_c4z_name(dat)
    if dat.exists() or not z.exists() or not store.exists(MANIFEST):
        return False
    try:
        rec = BuildDir.load(store).table
        with open_c4z(z) as f:
            both = [k for k in ("sha256_tree", "sha256") if getattr(rec, k, None) and k in f.header]
            return rec is not None and bool(both) and \
                all(getattr(rec, k) == f.header[k] for k in both)
    except (ValueError, OSError, C4Error):
        return False


def compress_build(table, drop_raw: bool, quiet: bool) -> Path:
    """After a local build's merge: write ``connect4_WxH.c4z`` beside the table (checked
    against the manifest's hashes); ``drop_raw`` then deletes the raw table."""
    from c4table.c4z.writer import compress_table
    from c4table.errors import BuildInputError
    table = Path(table)
    if not table.exists():
        raise BuildInputError(f"{table}: --compress needs a local build directory")
    out = compress_table(table, quiet=quiet, hashes=_manifest_hashes(table),
                         root=_manifest_root(table))
    if drop_raw:
        os.unlink(table)
    return out


def compress_options(f):
    f = click.option("--compress-only", "compress_only", is_flag=True,
                     help="like --compress, then delete the raw .dat (the manifest keeps its "
                          "hashes; verify checks them on the .c4z)")(f)
    f = click.option("--compress", "compress", is_flag=True,
                     help="also write DIR/connect4_WxH.c4z (compressed, queryable)")(f)
    return f


COMMANDS = [compress, decompress]
