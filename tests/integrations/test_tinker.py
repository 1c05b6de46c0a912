"""The Tinker integration with the real SDK against the loopback fake and a real in-process ledger:
spend held before every billable call, one ledger step per optimizer step, checkpoints with their
tinker:// paths and TTLs, a crash and a resume with the optimizer state, and the refusals."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402
from tinker.proto import tinker_public_pb2 as pb  # noqa: E402

from clients import LedgerClient, RetryPolicy, RunEnded, RunRecorder, SpendCapExceeded, Unavailable  # noqa: E402
from clients.integrations.pricing import TokenPrices  # noqa: E402
from clients.integrations.tinker import (  # noqa: E402
    METADATA_RUN_ID,
    METADATA_RUN_KEY,
    LedgeredServiceClient,
    ResumeRefused,
    RunDone,
    tinker_spec,
)
from clients.models import Reservation  # noqa: E402
from tests.client.server_thread import ServerThread  # noqa: E402
from tests.fakes.tinker import FakeTinkerServer  # noqa: E402
from tests.fakes.tinker.records import Call, Reply  # noqa: E402

MODEL = FakeTinkerServer.BASE_MODEL
HYPERPARAMETERS = {"learning_rate": 1e-4, "batch_size": 2}
SHEET = TokenPrices(
    {"prefill": 1_000_000, "prefill_cached": 250_000, "sample": 2_000_000, "train": 3_000_000},
    sheet="tinker-test",
    source="tests",
    as_of="2025-10",
)
OPTIM_USD = 5
BATCH_TOKENS = 6  # two datums: 4 + 2 input tokens
STEP_USD = SHEET.amount({"train": BATCH_TOKENS}) + OPTIM_USD  # 18 + 5
QUICK = RetryPolicy(attempts=3, initial_backoff_s=0.02, max_backoff_s=0.05, total_s=1.0)  # a short outage budget


class SamplingFake(FakeTinkerServer):
    """The fake plus Tinker's sampling endpoints: create_sampling_session, GET samplers/{id} and
    asample, which answers GENERATED tokens per sample and PROMPT_CACHE_HITS."""

    GENERATED = 3
    PROMPT_CACHE_HITS = 2

    def dispatch(self, call: Call) -> Reply:
        ep = call.endpoint
        if call.method == "GET" and ep.startswith("samplers/"):
            sampler_id = ep.split("/", 1)[1]
            return self.reply(call.record, {"sampler_id": sampler_id, "base_model": self.BASE_MODEL})
        if call.method != "POST" or ep not in ("create_sampling_session", "asample"):
            return super().dispatch(call)
        body = json.loads(call.raw)
        record = call.record
        record.body, record.session_id = body, body.get("session_id")
        if ep == "create_sampling_session":
            return self.reply(
                record,
                {
                    "type": "create_sampling_session",
                    "sampling_session_id": self.new_id(f"{body['session_id']}:sample"),
                },
            )
        response = pb.SampleResponse(prompt_cache_hit_tokens=self.PROMPT_CACHE_HITS)
        for _ in range(body["num_samples"]):
            response.sequences.add(
                stop_reason=pb.STOP_REASON_LENGTH, tokens=np.arange(self.GENERATED, dtype=np.int32).tobytes()
            )
        future = self.future(proto=response.SerializeToString(), failure=call.failure)
        future["sample_sequence_ids"] = [f"{future['request_id']}:{i}" for i in range(body["num_samples"])]
        record.request_id = future["request_id"]
        return self.reply(record, future)


@pytest.fixture
def fake() -> Iterator[SamplingFake]:
    server = SamplingFake().start()
    yield server
    server.stop()
    assert not server.errors, server.errors


@pytest.fixture
def ledger_server(tmp_path) -> Iterator[ServerThread]:
    server = ServerThread(str(tmp_path / "ledger.db")).start()
    yield server
    server.stop()


@pytest.fixture
def ledger(ledger_server: ServerThread) -> Iterator[LedgerClient]:
    with LedgerClient(ledger_server.address, principal="tests", timeout_s=5.0, retries=QUICK) as client:
        yield client


@pytest.fixture
def service(ledger: LedgerClient, fake: SamplingFake) -> LedgeredServiceClient:
    return LedgeredServiceClient(
        ledger,
        prices={MODEL: SHEET},
        optim_step_usd_micro=OPTIM_USD,
        base_url=fake.base_url,
        api_key=FakeTinkerServer.API_KEY,
        recorder_options={"batch_interval_s": 0.01, "flush_timeout_s": 5.0},
    )


def batch() -> list[types.Datum]:
    return [_datum([1, 2, 3, 4, 5]), _datum([6, 7, 8])]


def _datum(tokens: list[int]) -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
    )


def train(tc: Any, steps: int) -> None:
    for _ in range(steps):
        tc.forward_backward(batch(), "cross_entropy")
        tc.optim_step(types.AdamParams(learning_rate=1e-4)).result(timeout=30)


def head(ledger: LedgerClient) -> int:
    """The log's last position, for reads that must see every write made so far."""
    return max(event.position for event in ledger.read_events(from_position=1))


def reservations(ledger: LedgerClient, account: str) -> list[Reservation]:
    return ledger.list_reservations(account=account, min_position=head(ledger)).reservations


def refusal(call: Callable[[], Any], match: str | None = None) -> str:
    """The reason of the ResumeRefused that `call` raises."""
    with pytest.raises(ResumeRefused, match=match) as refused:
        call()
    return refused.value.reason


def fake_loss(step: int) -> float:
    """The fake's loss per target token after `step` optimizer steps."""
    return 0.1 + 2.0 * (0.8**step)


def test_steps_spend_checkpoints_and_session_metadata(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    started = datetime.now(UTC)
    with service.create_lora_training_client(MODEL, rank=8, hyperparameters=HYPERPARAMETERS) as tc:
        train(tc, 3)
        saved = tc.save_state("step-3", ttl_seconds=3_600).result(timeout=30)
        sampler = tc.save_weights_for_sampler("step-3").result(timeout=30)  # same step: no second record
        run_id, run_key = tc.run_id, tc.run_key
    model_id = fake.served("create_model")[0].model_id

    # The session (and the model) carry the run's id and key, for reconciling with Tinker's bill.
    (session,) = fake.sessions
    assert session.user_metadata == {METADATA_RUN_ID: run_id, METADATA_RUN_KEY: run_key}
    assert fake.models[model_id].user_metadata == {METADATA_RUN_ID: run_id, METADATA_RUN_KEY: run_key}
    assert fake.checkpoints[saved.path].user_metadata == {METADATA_RUN_ID: run_id, METADATA_RUN_KEY: run_key}
    assert session.finished == {"reason": {"type": "success"}, "detail": None}

    # One hold per call, reserved and committed at the sheet's price x the counted tokens.
    held = reservations(ledger, run_id)
    train_basis = {
        "price_sheet": "tinker-test (2025-10)",
        "price_source": "tests",
        "gpu": None,
        "tokens": [{"token_class": "train", "tokens": BATCH_TOKENS, "usd_micro_per_million_tokens": 3_000_000}],
    }
    fwd = [r for r in held if r.basis.tokens]
    optim = [r for r in held if not r.basis.tokens]
    assert len(fwd) == 3 and len(optim) == 3
    for entry in fwd:
        assert (entry.state, entry.amount_usd_micro, entry.actual_usd_micro, entry.attempt) == ("committed", 18, 18, 1)
        assert entry.basis.to_dict() == train_basis and entry.actual_basis.to_dict() == train_basis
    assert {(r.state, r.amount_usd_micro, r.actual_usd_micro) for r in optim} == {("committed", 5, 5)}
    assert [r.body["n_tokens"] for r in fake.served("forward_backward")] == [BATCH_TOKENS] * 3

    # One ledger step per optimizer step, with the loss per target token, tokens and spend.
    state = ledger.get_run_state(run_id=run_id, min_position=head(ledger))
    assert state.run.status == "done" and state.run.spec["lora_rank"] == 8
    assert state.run.summary["steps"] == 3 and state.run.summary["tinker_session_id"] == session.session_id
    assert (state.spend.committed_usd_micro, state.spend.pending_usd_micro) == (3 * STEP_USD, 0)
    series = ledger.get_series(run_id=run_id)
    assert (series.steps, series.tokens, series.usd_micro) == ([1, 2, 3], [6] * 3, [STEP_USD] * 3)
    columns = {column.name: column.values for column in series.metrics}
    assert columns["loss"] == pytest.approx([fake_loss(0), fake_loss(1), fake_loss(2)])
    assert columns["loss:sum"] == pytest.approx([6 * fake_loss(0), 6 * fake_loss(1), 6 * fake_loss(2)])
    assert columns["learning_rate"] == pytest.approx([1e-4] * 3)

    # The checkpoint: the tinker:// path, weights+optimizer, expiring with its TTL.
    checkpoint = state.checkpoint
    assert saved.path == f"tinker://{model_id}/weights/step-3" and sampler.path.endswith("/sampler_weights/step-3")
    assert (checkpoint.step, checkpoint.handle.to_dict()) == (
        3,
        {"backend": "tinker", "uri": saved.path, "fidelity": "weights+optimizer"},
    )
    expected = started + timedelta(seconds=3_600)
    assert expected <= checkpoint.expires_at <= expected + timedelta(seconds=30)
    assert state.resume.available and state.resume.from_step == 3


def test_crash_then_resume_with_optimizer(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    first = service.create_lora_training_client(MODEL, rank=8, hyperparameters=HYPERPARAMETERS)
    train(first, 3)
    paths = first.save_checkpoint("ckpt-3").result(timeout=30)
    train(first, 2)  # steps 4 and 5, lost with the process
    assert first.recorder.flush(10)
    run_id = first.run_id
    # The crash: the clients are dropped; nothing is finished, on the ledger or on Tinker.
    assert fake.sessions[0].finished is None
    assert ledger.get_run_state(run_id=run_id, min_position=head(ledger)).last_step == 5

    second = service.resume(base_model=MODEL, rank=8, hyperparameters=HYPERPARAMETERS)
    (load,) = fake.served("load_weights")
    assert (load.body["path"], load.body["optimizer"]) == (paths["path"], True)
    resumed_model = fake.models[load.model_id]
    assert (resumed_model.loaded_from, resumed_model.optimizer_loaded, resumed_model.step) == (paths["path"], True, 3)
    assert (second.run_id, second.attempt, second.step) == (run_id, 2, 3)
    assert fake.sessions[1].user_metadata[METADATA_RUN_ID] == run_id

    train(second, 2)
    second.finish()
    first.close()  # Only to stop the dead attempt's threads in this test process.

    state = ledger.get_run_state(run_id=run_id, min_position=head(ledger))
    assert [(a.number, a.resumed_from_step, a.ended) for a in state.attempts] == [(1, None, True), (2, 3, True)]
    assert state.checkpoint.sampler_uri == paths["sampler_path"]
    series = ledger.get_series(run_id=run_id)
    assert list(zip(series.steps, series.attempts, strict=True)) == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
    everything = ledger.get_series(run_id=run_id, include_superseded=True)
    columns = zip(everything.steps, everything.attempts, everything.superseded, strict=True)
    superseded = [(s, a) for s, a, gone in columns if gone]
    assert superseded == [(4, 1), (5, 1)]
    # The optimizer state came back: attempt 2's steps see the losses attempt 1 saw.
    losses = {column.name: column.values for column in series.metrics}["loss"]
    assert losses == pytest.approx([fake_loss(step) for step in range(5)])
    # The cap binds across attempts: both attempts' spend is on the run.
    assert state.spend.committed_usd_micro == 7 * STEP_USD


def test_a_refused_hold_stops_before_tinker_sees_the_call(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    cap = 2 * STEP_USD + 10  # room for two steps, not for a third forward_backward (18)
    with pytest.raises(SpendCapExceeded) as refused:
        with service.create_lora_training_client(
            MODEL, rank=8, hyperparameters={"cap": "small"}, cap_usd_micro=cap
        ) as tc:
            train(tc, 2)
            tc.forward_backward(batch(), "cross_entropy")
            pytest.fail("the forward_backward past the cap must not be sent")
    assert refused.value.remaining_usd_micro == 10
    assert fake.count("forward_backward") == 2 and fake.count("optim_step") == 2
    state = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger))
    assert state.run.status == "stopped"
    assert state.spend.committed_usd_micro == 2 * STEP_USD <= cap
    assert state.spend.pending_usd_micro == 0 and state.spend.overrun_usd_micro == 0
    assert sorted(r.state for r in reservations(ledger, tc.run_id)).count("refused") == 1


def test_a_tinker_error_releases_the_hold(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    tc = service.create_lora_training_client(MODEL, rank=4, hyperparameters={"errors": True})
    fake.fail_next("forward_backward", status=400, body={"detail": "bad datum"})
    with pytest.raises(tinker.BadRequestError):
        tc.forward_backward(batch(), "cross_entropy").result(timeout=30)
    fake.fail_next("optim_step", error="injected: optimizer failed")
    with pytest.raises(tinker.RequestFailedError):
        tc.optim_step(types.AdamParams()).result(timeout=30)
    train(tc, 1)  # the client goes on: step 1 is the first that happened
    tc.finish()
    held = reservations(ledger, tc.run_id)
    released = [r for r in held if r.state == "released"]
    assert [r.reason.split(":")[0] for r in released] == ["BadRequestError", "RequestFailedError"]
    assert sorted(r.state for r in held) == ["committed", "committed", "released", "released"]
    state = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger))
    assert (state.spend.committed_usd_micro, state.spend.pending_usd_micro) == (STEP_USD, 0)
    assert ledger.get_series(run_id=tc.run_id).steps == [1]
    assert [(r.status, r.injected) for r in fake.served("forward_backward")] == [(400, True), (200, False)]


def test_an_unreachable_ledger_fails_closed(
    service: LedgeredServiceClient, ledger: LedgerClient, ledger_server: ServerThread, fake: SamplingFake
) -> None:
    tc = service.create_lora_training_client(MODEL, rank=4, hyperparameters={"outage": True})
    train(tc, 1)
    fwd = tc.forward_backward(batch(), "cross_entropy")  # held while the ledger was up
    assert tc.recorder.flush(10)
    ledger_server.stop()
    assert fwd.result(timeout=30).metrics["loss:sum"] > 0  # spent: its commit waits for the ledger
    with pytest.raises(Unavailable):
        tc.optim_step(types.AdamParams())
    with pytest.raises(Unavailable):
        tc.forward_backward(batch(), "cross_entropy")
    assert fake.count("forward_backward") == 2 and fake.count("optim_step") == 1

    ledger_server.start()  # same port, same database
    ledger.wait_ready(10)
    tc.optim_step(types.AdamParams()).result(timeout=30)  # commits the deferred hold first
    tc.finish()
    state = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger))
    assert (state.spend.committed_usd_micro, state.spend.pending_usd_micro) == (2 * STEP_USD, 0)
    assert {r.state for r in reservations(ledger, tc.run_id)} == {"committed"}
    assert ledger.get_series(run_id=tc.run_id).usd_micro == [STEP_USD, STEP_USD]

    ledger_server.stop()
    with pytest.raises(Unavailable):  # and no Tinker session for a run the ledger cannot open
        service.create_lora_training_client(MODEL, rank=4, hyperparameters={"outage": 2})
    assert len(fake.sessions) == 1


def test_sampling_holds_prefill_and_samples_and_commits_what_came_back(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    tc = service.create_lora_training_client(MODEL, rank=4, hyperparameters={"sampling": True})
    sampler_path = tc.save_weights_for_sampler("s0").result(timeout=30).path
    sampling = tc.create_sampling_client(sampler_path)
    prompt = types.ModelInput.from_ints([1, 2, 3, 4, 5])
    response = sampling.sample(prompt, 2, types.SamplingParams(max_tokens=4)).result(timeout=30)
    assert [len(s.tokens) for s in response.sequences] == [3, 3]
    with pytest.raises(ValueError, match="max_tokens"):
        sampling.sample(prompt, 1, types.SamplingParams())
    train(tc, 1)  # the sample's spend lands on the next step
    tc.finish()

    (entry,) = [
        r for r in reservations(ledger, tc.run_id) if any(line.token_class == "sample" for line in r.basis.tokens)
    ]
    projected = {"prefill": 5, "sample": 8, "prefill_cached": 5}
    actual = {"prefill": 3, "prefill_cached": 2 + 5, "sample": 6}
    assert {line.token_class: line.tokens for line in entry.basis.tokens} == projected
    assert {line.token_class: line.tokens for line in entry.actual_basis.tokens} == actual
    assert (entry.amount_usd_micro, entry.actual_usd_micro) == (SHEET.amount(projected), SHEET.amount(actual))
    assert fake.served("asample")[0].body["num_samples"] == 2
    series = ledger.get_series(run_id=tc.run_id)
    assert series.usd_micro == [STEP_USD + SHEET.amount(actual)]
    state = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger))
    # The sampler save before any step is a weights-only checkpoint at step 0: no resume point.
    assert state.checkpoint.step == 0 and state.checkpoint.handle.fidelity == "weights"
    assert state.checkpoint.sampler_uri == sampler_path


def test_resume_refuses_loudly(service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake) -> None:
    # Nothing saved yet: nothing to resume; a run with progress is not restarted from scratch.
    tc = service.create_lora_training_client(MODEL, rank=8, hyperparameters={"refusals": 1})
    train(tc, 1)
    tc.save_state("short", ttl_seconds=1).result(timeout=30)
    expired_after = time.monotonic() + 1.1
    tc.close()
    assert (
        refusal(lambda: service.resume(base_model=MODEL, rank=8, hyperparameters={"refusals": "never opened"}))
        == "NO_CHECKPOINT"
    )
    assert (
        refusal(lambda: service.create_lora_training_client(MODEL, rank=8, hyperparameters={"refusals": 1}))
        == "RUN_ALREADY_STARTED"
    )

    # The LoRA rank asked for is not the run's.
    assert refusal(lambda: service.resume(run_key=tc.run_key, rank=16)) == "LORA_MISMATCH"

    # A checkpoint another backend holds.
    spec = tinker_spec(MODEL, 8, {"refusals": "local"})
    local = RunRecorder.open(ledger, run_key="local-run", spec=spec)
    local.log(1, loss=1.0)
    local.checkpoint(1, "file:///tmp/ckpt-1", "local", "weights+optimizer")
    local.close()
    assert refusal(lambda: service.resume(run_key="local-run"), match="'local'") == "BACKEND_MISMATCH"

    # A sampler-only checkpoint holds no optimizer state.
    sampler_only = service.create_lora_training_client(MODEL, rank=8, hyperparameters={"refusals": "sampler"})
    train(sampler_only, 1)
    sampler_only.save_weights_for_sampler("s1").result(timeout=30)
    sampler_only.close()
    assert refusal(lambda: service.resume(run_key=sampler_only.run_key)) == "FIDELITY_MISMATCH"

    # The spec says rank 16 but the Tinker state is rank 8: refused after loading, before any attempt.
    donor = service.create_lora_training_client(MODEL, rank=8, hyperparameters={"refusals": "donor"})
    train(donor, 1)
    donor_path = donor.save_state("donor").result(timeout=30).path
    donor.close()
    liar = RunRecorder.open(ledger, run_key="rank-16", spec=tinker_spec(MODEL, 16, {}))
    liar.log(1, loss=1.0)
    liar.checkpoint(1, donor_path, "tinker", "weights+optimizer")
    liar.close()
    assert refusal(lambda: service.resume(run_key="rank-16"), match="rank 8") == "LORA_MISMATCH"
    liar_state = ledger.get_run_state(run_id=liar.run_id, min_position=head(ledger))
    assert len(liar_state.attempts) == 1

    # The state expired (Tinker's TTL, mirrored by expires_at).
    time.sleep(max(0.0, expired_after - time.monotonic()))
    assert refusal(lambda: service.resume(run_key=tc.run_key), match="expired") == "CHECKPOINT_EXPIRED"

    # Every refusal before the last came before any load; the last loaded once and stopped.
    assert fake.count("load_weights") == 1
    assert fake.sessions[-1].finished == {"reason": {"type": "errored"}, "detail": None}

    # A done run takes no new attempt.
    done = service.create_lora_training_client(MODEL, rank=8, hyperparameters={"refusals": "done"})
    train(done, 1)
    done.save_state("final", final=True).result(timeout=30)
    done.finish()
    with pytest.raises(RunDone):
        service.resume(run_key=done.run_key)
    assert fake.count("load_weights") == 1


def test_an_interrupt_ends_the_run_stopped_and_an_error_failed(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    with pytest.raises(KeyboardInterrupt):
        with service.create_lora_training_client(MODEL, rank=4, hyperparameters={"ends": "interrupt"}) as tc:
            train(tc, 1)
            raise KeyboardInterrupt
    run = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger)).run
    assert (run.status, run.error) == ("stopped", "KeyboardInterrupt")
    assert fake.sessions[-1].finished == {"reason": {"type": "interrupted"}, "detail": "KeyboardInterrupt"}
    with pytest.raises(ValueError):
        with service.create_lora_training_client(MODEL, rank=4, hyperparameters={"ends": "error"}) as tc:
            raise ValueError("bad data")
    run = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger)).run
    assert (run.status, run.error) == ("failed", "ValueError: bad data")


def test_an_ended_run_is_resumed_only_with_reopen(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    hyperparameters = {"reopen": True}
    with pytest.raises(RuntimeError, match="lost the data loader"):
        with service.create_lora_training_client(
            MODEL, rank=4, hyperparameters=hyperparameters, name="reopen-tinker"
        ) as first:
            train(first, 2)
            first.save_state("step-2").result(timeout=30)
            raise RuntimeError("lost the data loader")
    for attempt in (
        lambda: service.resume(base_model=MODEL, rank=4, hyperparameters=hyperparameters),
        lambda: service.create_lora_training_client(MODEL, rank=4, hyperparameters=hyperparameters, restart=True),
    ):
        with pytest.raises(RunEnded) as refused:
            attempt()
        assert refused.value.status == "failed" and first.run_id in str(refused.value)
        assert "use a new run key, or pass reopen=True to start a new attempt on it" in str(refused.value)
    assert fake.count("load_weights") == 0 and len(fake.sessions) == 1  # refused before Tinker saw anything

    with service.resume(base_model=MODEL, rank=4, hyperparameters=hyperparameters, reopen=True) as second:
        assert (second.run_id, second.attempt, second.step) == (first.run_id, 2, 2)
        train(second, 1)
    state = ledger.get_run_state(run_id=first.run_id, min_position=head(ledger))
    assert state.run.status == "done" and state.last_step == 3
    for reopen in (False, True):  # A done run takes no new attempt: the same refusal, RunDone by its old name.
        with pytest.raises(RunDone, match="is done: use a new run key") as refused:
            service.resume(base_model=MODEL, rank=4, hyperparameters=hyperparameters, reopen=reopen)
        assert isinstance(refused.value, RunEnded)


def test_a_cap_given_when_the_run_is_resumed_binds(
    service: LedgeredServiceClient, ledger: LedgerClient, fake: SamplingFake
) -> None:
    # Opened uncapped; the crash; the resume names a cap with room for one more step only.
    hyperparameters = {"cap on resume": True}
    first = service.create_lora_training_client(MODEL, rank=4, hyperparameters=hyperparameters)
    train(first, 2)
    first.save_state("step-2").result(timeout=30)
    assert first.recorder.flush(10)
    first.close()
    cap = 3 * STEP_USD + 10
    with pytest.raises(SpendCapExceeded):
        with service.resume(base_model=MODEL, rank=4, hyperparameters=hyperparameters, cap_usd_micro=cap) as second:
            train(second, 5)
    state = ledger.get_run_state(run_id=first.run_id, min_position=head(ledger))
    assert state.spend.cap_usd_micro == cap
    assert state.spend.committed_usd_micro == 3 * STEP_USD <= cap
    assert state.run.status == "stopped" and state.last_step == 3


def test_evaluations_score_the_next_checkpoint_and_the_plan_and_datasets_are_recorded(
    service: LedgeredServiceClient, ledger: LedgerClient
) -> None:
    from tests.trainers.tiny import rows_digest_by_hand

    rows = [{"prompt": "what is one plus one ?", "completion": "two"}, {"prompt": "sky ?", "completion": "blue"}]
    with service.create_lora_training_client(
        MODEL,
        rank=8,
        hyperparameters=HYPERPARAMETERS,
        max_steps=4,
        objective=("eval_loss", "min"),
        datasets={"train": rows},
    ) as tc:
        train(tc, 2)
        tc.evaluate(batch()).result(timeout=30)  # the fake's loss per token after 2 steps: 0.1 + 2 x 0.8^2
        tc.save_checkpoint("step-2").result(timeout=30)
        train(tc, 2)
        tc.save_state("step-4", scores={"accuracy": 0.5, "broken": float("nan")}).result(timeout=30)
    state = ledger.get_run_state(run_id=tc.run_id, min_position=head(ledger))
    assert state.progress.max_steps == 4 and state.progress.step == 4
    assert state.run.objective is not None and (state.run.objective.metric, state.run.objective.mode) == (
        "eval_loss",
        "min",
    )
    checkpoints = ledger.list_checkpoints(run_id=tc.run_id).checkpoints
    # An evaluation scores the next checkpoint only; given scores are kept, non-finite ones dropped.
    assert {checkpoint.step: checkpoint.scores for checkpoint in checkpoints} == {
        2: {"eval_loss": pytest.approx(1.38)},
        4: {"accuracy": 0.5},
    }
    assert ledger.best_checkpoint(run_id=tc.run_id).checkpoint.step == 2
    (dataset,) = state.datasets
    assert (dataset.role, dataset.format, dataset.rows, dataset.tokens) == ("train", "prompt_completion", 2, None)
    assert dataset.digest == rows_digest_by_hand(rows)
    assert dataset.report == {"columns": ["completion", "prompt"], "rows": 2}
