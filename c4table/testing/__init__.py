"""Test kits shipped with the package (as zarr ships ``zarr.testing``), for c4table's own tests
and tools and for code built on c4table: the independent brute-force oracle (:mod:`.oracle`),
the table contract every reader keeps (:mod:`.contract`, needs pytest), killing builds at random
points (:mod:`.faults`) and a dask cluster with an S3 server on loopback (:mod:`.cluster`, needs
the ``dask`` extra and moto). Nothing else in c4table imports this package.
"""
