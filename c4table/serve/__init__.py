"""``c4table serve``: the HTTP application and its running (:mod:`~c4table.serve.app`), the JSON
API's answers (:mod:`~c4table.serve.service`), the tables served (:mod:`~c4table.serve.tables`),
the counters (:mod:`~c4table.serve.metrics`), the OpenAPI description
(:mod:`~c4table.serve.openapi`) and the web board (:mod:`~c4table.serve.page`, static files in
``web/``)."""
