"""``c4table serve``: the JSON API and the web board (:mod:`~c4table.serve.app`, static files
in ``web/``)."""
