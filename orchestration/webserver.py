"""Dagster's webserver behind a same-origin guard: `python -m orchestration.webserver` takes
the options of `dagster-webserver`.

The UI has no sign-in, and any web page the user opens could make the browser send requests
to it: Dagster runs a GraphQL mutation (launch a run, wipe an asset) from a GET's query string
or from a form's POST, neither of which a browser asks permission for. The guard refuses, with
403 and the reason:
- a request whose Origin is another site (browsers send it with every cross-site POST and
  WebSocket);
- a Host that is not this machine's loopback name (another site's name resolved to 127.0.0.1,
  "DNS rebinding");
- GraphQL in a GET's query string, or in a POST that is not JSON (the UI itself only POSTs JSON,
  which a cross-site page cannot send without the server's consent).
Clients without a browser (curl, scripts, the tests) send no Origin and pass.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def refusal(scope: dict) -> str | None:
    """Why the guard refuses this ASGI request, or None."""
    headers = {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])
    }
    host = headers.get("host", "")
    if urlsplit(f"//{host}").hostname not in {name.strip("[]") for name in LOOPBACK_NAMES}:
        return f"Host {host!r} is not this machine's loopback address"
    origin = headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != host:
        return f"a request from another site ({origin})"
    if scope["type"] == "http" and scope["path"].rstrip("/").endswith("/graphql"):
        if scope["method"] == "GET" and "query" in parse_qs(scope.get("query_string", b"").decode()):
            return "GraphQL in a GET's query string (POST it as JSON)"
        if scope["method"] == "POST" and "application/json" not in headers.get("content-type", ""):
            return "GraphQL in a POST that is not JSON (send Content-Type: application/json)"
    return None


class SameOriginOnly:
    """ASGI middleware around the webserver's app: see the module's docstring."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        reason = refusal(scope) if scope["type"] in ("http", "websocket") else None
        if reason is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
        else:
            body = f"refused by the RetailMax scheduler's guard: {reason}\n".encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})


def main() -> None:
    import dagster_webserver.cli as webserver_cli

    # The CLI builds its app through this module-level name; wrapping it is the one way in
    # that keeps every other option and behaviour of `dagster-webserver`.
    build = webserver_cli.create_app_from_workspace_process_context
    webserver_cli.create_app_from_workspace_process_context = lambda *args, **kwargs: SameOriginOnly(
        build(*args, **kwargs)
    )
    webserver_cli.main()


if __name__ == "__main__":
    main()
