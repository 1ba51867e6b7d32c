"""The build-directory format, shared by the build and the readers: the manifest
(:mod:`~c4table.builddir.manifest`), the shards (:mod:`~c4table.builddir.shards`) and a
checked, read-only view of a finished build (:class:`~c4table.builddir.reader.BuildDir`)."""
