"""`lakehouse data-docs`: the quality gates' Data Docs (the static site Great Expectations writes
under QUALITY_DIR at each validation, lakehouse/quality.py) on http://localhost:8085
(QUALITY_DOCS_PORT), served beside the pipeline by `make up`."""

from __future__ import annotations

from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from lakehouse.quality import docs_dir
from lakehouse.settings import Settings


def serve(settings: Settings) -> None:
    site = docs_dir(settings.quality_dir)
    site.mkdir(parents=True, exist_ok=True)
    # GX writes index.html at the first validation; until then the listing shows it is empty.
    server = ThreadingHTTPServer(
        ("127.0.0.1", settings.docs_port), partial(SimpleHTTPRequestHandler, directory=str(site))
    )
    print(f"Data Docs on http://localhost:{settings.docs_port}/ from {site} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
