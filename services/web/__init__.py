"""The web dashboard: `trainledger serve` serves it over HTTP beside gRPC, in the same process and
on the same event loop, reading the same views through the same Edge and Gate.

- services.web.app: the Starlette app (`create_app(edge, gate)`), its routes and error handling;
- services.web.api: the JSON API (runs, a run, its chart and spend, compare, accounts, registry,
  events); services.web.params: its parameters, validated and bounded; services.web.documents:
  the JSON documents of the read models;
- services.web.live: a run's server-sent events, the SSE encoder of the run feed
  (services.runtime.feed); services.web.live_runs: the runs page's, fed by the projector's
  notifications;
- services.web.pages, services.web.run_page, services.web.compare: the server-rendered pages (the
  charts are drawn by static/dashboard.js and the page modules it starts: runpage.js,
  runspage.js, comparepage.js), in the HTML of services.web.markup (compare also answers
  /api/compare/diff, what runs differ in); services.web.login: the token form;
- services.web.events: the log's events, a page at a time (/api/events and the events page);
- services.web.access: bearer tokens (header or cookie) checked by services.runtime.auth's Gate, each
  endpoint as the gRPC method it mirrors;
- services.web.hosts: the Host headers it answers (DNS rebinding);
- services.web.serving: uvicorn on connections it accepts itself: capped, timed, over TLS when
  gRPC is.

services.server starts it (services.web.serving.Dashboard on a socket bound by create_server) and
stops it with gRPC.
"""

from services.web.app import create_app

__all__ = ["create_app"]
