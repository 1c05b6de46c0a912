"""A loopback stand-in for Tinker's HTTP API, good enough for the real ``tinker`` SDK (0.38.x):
what the integration's tests run the real SDK against, and what a trial run of
examples/tinker_lora.py talks to (``python -m tests.fakes.tinker`` serves one until interrupted).

The real SDK talks real HTTP to this server on 127.0.0.1 (no mocks inside the SDK, no httpx
MockTransport). Stdlib only, plus the SDK's own protobuf module for the forward_backward
request/response bodies. Nothing is trained: losses are made up, checkpoints are names in
memory, and everything is gone when the server stops.

    server = FakeTinkerServer().start()
    client = tinker.ServiceClient(base_url=server.base_url, api_key=FakeTinkerServer.API_KEY,
                                  user_metadata={"ledger_run_id": "run-1"})
    tc = client.create_lora_training_client("fake/base-model", rank=8).result()
    ...
    assert server.count("forward_backward") == 3
    assert server.sessions[0].user_metadata == {"ledger_run_id": "run-1"}
    server.stop()

Endpoints (all under /api/v1):
    POST client/config, client/dynamic_config, create_session, session_heartbeat, telemetry,
         create_model, get_info, forward_backward (protobuf), optim_step, save_weights,
         save_weights_for_sampler, load_weights, retrieve_future, sessions/{id}/finish
    GET  healthz, get_server_capabilities, training_runs/{run}/checkpoints
    GET  billing/usage/events (AdminClient.get_billing_usage; see "The bill" below)

Asynchronous work follows Tinker's shape: a POST returns ``{"request_id": ...}`` and the SDK
polls ``retrieve_future`` for the result (``try_again_polls`` makes it poll more than once).

The bill (GET billing/usage/events?starting_on=...&ending_before=..., what
``tinker.AdminClient(base_url=..., api_key=...).get_billing_usage(start, end)`` asks): the test
says what Tinker billed, as hourly buckets in the wire shape of ``BillingUsageEvent``, made with
``usage_event`` (one bucket of one kind: training, sampling_prefill cached or not, sampling_sample,
checkpoint (never priced), storage (gigabyte_hours, paid or free)):

    server.bill([usage_event("training", 1200, bucket_start=hour, session_id=sid, estimated_cost_usd=0.0036),
                 usage_event("checkpoint", 2, bucket_start=hour, session_id=sid)],
                cost_data_through=hour + timedelta(hours=1))
    server.bill(source=lambda start, end: [...])                 # or a function of the window asked
    server.restate(lambda e: e["session_id"] == sid, estimated_cost_usd=0.0041)  # a bucket re-priced
    server.bill_sessions["sess-x"] = None                        # a session's user_metadata, by hand

Each answer holds the buckets whose bucket_start lies in the window, ordered by bucket then by
descending quantity, ``sessions`` ({session_id: {"user_metadata": ...}} for every session in
``data``: the user_metadata the session was really created with here (None when it had none),
unless ``bill_sessions``, or the ``sessions=`` of bill(), says otherwise; None for a session
nobody knows), and ``cost_data_through`` as configured. The parameters are checked as Tinker
does: both required, RFC 3339, aligned to a UTC hour, starting_on not in the future (``now=``
sets the clock), ending_before after starting_on and at most 14 days after it; anything else is a
400 (tinker.BadRequestError). A datetime without an offset is read as UTC. Every window served is
in ``server.billing_windows``.

Failure injection:
    server.fail_next("forward_backward", status=500)           # HTTP error (the SDK retries 5xx)
    server.fail_next("forward_backward", status=400)           # HTTP error the SDK does not retry
    server.fail_next("forward_backward", error="boom")         # accepted, then the future fails:
                                                               #   SDK raises tinker.RequestFailedError
    server.fail_next("billing/usage/events", status=503)       # a GET fails with its status only

Everything served is recorded in ``server.requests`` (list of ``Served``).
"""

from tests.fakes.tinker.billing import usage_event
from tests.fakes.tinker.records import Failure, FakeCheckpoint, FakeModel, FakeSession, Served
from tests.fakes.tinker.server import FakeTinkerServer

__all__ = ["FakeTinkerServer", "Served", "FakeSession", "FakeModel", "FakeCheckpoint", "Failure", "usage_event"]
