"""The block codecs a ``.c4z`` can name, by name: the header's ``transform`` field is the name
under which a codec class is registered (:func:`register_codec`), and a reader finds the class
there (:func:`get_codec`), as zarr-python finds an array's codecs by the names in its
metadata. A writer writes its codec's name into the header; a file naming a codec this
version does not know is refused in one line. Where a new codec goes: ``docs/c4z.md``.

>>> import c4table.c4z                     # registers both formats' codecs
>>> from c4table.c4z.blocks import PlySymbolCodec
>>> get_codec("varint-plysym-v3") is PlySymbolCodec
True
>>> get_codec("varint-plysym-v9")
Traceback (most recent call last):
c4table.errors.TableError: no .c4z block codec named 'varint-plysym-v9' (this c4table knows rulekeys-frames-v5, rulekeys-plysym-v4, varint-plysym-v3); upgrade c4table
"""
from __future__ import annotations

from c4table.errors import TableError

_CODECS: dict[str, type] = {}


def register_codec(name: str):
    """Class decorator: register a block codec class under ``name`` (the header's
    ``transform``) and set its ``name``; ValueError if another class holds the name."""
    def register(cls: type) -> type:
        held = _CODECS.get(name)
        if held is not None and held is not cls:
            raise ValueError(f"block codec name {name!r} is already {held.__qualname__}'s")
        cls.name = name
        _CODECS[name] = cls
        return cls
    return register


def get_codec(name) -> type:
    """The block codec class registered under ``name``; :class:`TableError` (one line) if none
    is."""
    cls = _CODECS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise TableError(f"no .c4z block codec named {name!r} (this c4table knows "
                         f"{', '.join(codec_names())}); upgrade c4table")
    return cls


def has_frames(cls: type) -> bool:
    """Whether the block codec class ``cls`` keeps its outcome symbols in frames whose entries
    a writer sets (``frame_entries``: format 5's).

    >>> import c4table.c4z
    >>> has_frames(get_codec("rulekeys-frames-v5")), has_frames(get_codec("varint-plysym-v3"))
    (True, False)
    """
    return "frame_entries" in getattr(cls, "__dataclass_fields__", {})


def codec_names() -> list[str]:
    """The names of the registered block codecs, sorted."""
    return sorted(_CODECS)
