"""The run page's lineage and system sections over real HTTP: a run opened from another run's
checkpoint says "from NAME at step N" with a link to its source, the source lists its children
(each linked), and the system/ metrics (clients.system) get their own "System" charts below the
training charts, never mixed with them; a run without either shows neither."""

from __future__ import annotations

import httpx

from clients import LedgerClient, RunSourceCheckpoint
from tests.web.conftest import fresh_key
from tests.web.test_pages import page


def _trained(client: LedgerClient, name: str, metrics: dict[str, list[float]]) -> str:
    run_id = client.open_run(run_key=fresh_key(), name=name).state.run.run_id
    attempt = client.start_attempt(run_id=run_id).attempt
    client.append_steps(run_id=run_id, attempt=attempt, steps=list(range(6)), metrics=metrics)
    client.save_checkpoint(run_id=run_id, attempt=attempt, step=5, uri="s3://ckpt/base/5", backend="s3")
    return run_id


def test_a_run_page_shows_its_source_and_its_children(http: httpx.Client, grpc_client: LedgerClient) -> None:
    base = _trained(grpc_client, "web-lineage-base", {"loss": [1.0] * 6})
    source = RunSourceCheckpoint(run_id=base, step=5, uri="s3://ckpt/base/5")
    child = grpc_client.open_run(run_key=fresh_key(), name="web-lineage-<child>", source_checkpoint=source)
    child_id = child.state.run.run_id
    grpc_client.get_run_state(run_id=base, min_position=child.position)

    main = page(http, f"/runs/{child_id}").one("main")
    lineage = main.one(data_field="source")
    # "from <a>web-lineage-base</a> at step 5" (the parser keeps a tag's own text apart from its children's).
    assert [text.strip() for text in lineage.texts] == ["from", "at step 5"]
    link = lineage.one("a")
    assert (link.text, link.attrs["href"]) == ("web-lineage-base", f"/runs/{base}")
    # No child yet: the Children panel is an empty hidden section, there for the live feed to fill.
    (empty,) = main.all(data_live="children")
    assert "hidden" in empty.attrs and not empty.children

    main = page(http, f"/runs/{base}").one("main")
    assert not main.all(data_field="source")
    rows = main.one(data_live="children").one("table", class_="children").all("tr")[1:]
    assert [row.attrs["data-run-id"] for row in rows] == [child_id]
    cells = [cell.text for cell in rows[0].all("td")]
    assert cells[:2] == ["web-lineage-<child>", "5"]  # the name escaped, read back as text
    assert rows[0].one("a").attrs["href"] == f"/runs/{child_id}"


def test_system_metrics_get_their_own_section_below_the_training_charts(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    metrics = {"loss": [1.0] * 6, "system/gpu.0.util": [50.0] * 6, "system/cpu.util": [20.0] * 6}
    run_id = _trained(grpc_client, "web-system", metrics)
    grpc_client.get_run_state(run_id=run_id, min_position=grpc_client.get_run_state(run_id=run_id).position)
    main = page(http, f"/runs/{run_id}").one("main")
    training = main.one("section", class_="charts", data_section="training")
    system = main.one("section", class_="charts", data_section="system")
    assert [f.attrs["data-metric"] for f in training.all("figure", class_="chart")] == ["loss"]
    assert sorted(f.attrs["data-metric"] for f in system.all("figure", class_="chart")) == [
        "system/cpu.util",
        "system/gpu.0.util",
    ]
    sections = [s for s in main.all("section") if s.attrs.get("data-section")]
    assert [s.attrs["data-section"] for s in sections] == ["training", "system"]
    assert system.parent is not None and system.parent.one("h2").text == "System"


def test_a_run_without_system_metrics_has_no_system_section(http: httpx.Client, grpc_client: LedgerClient) -> None:
    run_id = _trained(grpc_client, "web-no-system", {"loss": [1.0] * 6})
    main = page(http, f"/runs/{run_id}").one("main")
    assert not main.all(data_section="system") and main.all(data_section="training")


def test_the_family_page_links_a_version_to_its_run_and_checkpoint_step(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    from clients import SourceCheckpoint

    run_id = _trained(grpc_client, "web-lineage-registered", {"loss": [1.0] * 6})
    registered = grpc_client.register(
        family="web-lineage-family",
        artifact_uri="s3://m/lineage",
        digest="sha256:" + "4c" * 32,
        source_checkpoint=SourceCheckpoint(run_id=run_id, step=5),
    )
    grpc_client.list_versions(family="web-lineage-family", min_position=registered.position)  # projected
    row = page(http, "/registry/web-lineage-family").one("table", class_="versions").one("tr", data_version="1")
    run_link, step_link = row.all("a")
    assert run_link.attrs["href"] == f"/runs/{run_id}"
    assert (step_link.text, step_link.attrs["href"]) == ("5", f"/runs/{run_id}#checkpoint-5")
    # The run page has the row that anchor names: the checkpoint at step 5.
    anchored = page(http, f"/runs/{run_id}").one("tr", id="checkpoint-5")
    assert anchored.attrs["data-step"] == "5"


def test_progress_without_a_plan_is_against_the_specs_max_steps(http: httpx.Client, grpc_client: LedgerClient) -> None:
    opened = grpc_client.open_run(
        run_key=fresh_key(), name="web-spec-steps", spec={"hyperparameters": {"max_steps": 40}}
    )
    run_id = opened.state.run.run_id
    attempt = grpc_client.start_attempt(run_id=run_id).attempt
    appended = grpc_client.append_steps(
        run_id=run_id, attempt=attempt, steps=list(range(10)), metrics={"loss": [1.0] * 10}
    )
    grpc_client.get_run_state(run_id=run_id, min_position=appended.position)
    main = page(http, f"/runs/{run_id}").one("main")
    progress = main.one(data_field="progress")
    assert progress.attrs["data-max-steps"] == "40"
    assert progress.one("span", class_="progress-text").text.startswith("step 9 of 40 (22.5%)")
    row = page(http, "/", name="web-spec-steps").one("tr", data_run_id=run_id)
    assert row.one(data_field="progress").text == "22%"


def test_a_retracted_source_or_child_is_marked_as_the_runs_page_marks_it(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    """A run started from a run retracted since (its results no evidence) must not read as a
    plain "from NAME": the lineage line marks the source retracted, and the Children panel marks
    a retracted child, as the runs page's rows do."""
    base = _trained(grpc_client, "web-lineage-gone-base", {"loss": [1.0] * 6})
    source = RunSourceCheckpoint(run_id=base, step=5, uri="s3://ckpt/base/5")
    child = grpc_client.open_run(run_key=fresh_key(), name="web-lineage-gone-child", source_checkpoint=source)
    child_id = child.state.run.run_id
    grpc_client.retract_run(run_id=base, reason="leaked eval set")
    receipt = grpc_client.retract_run(run_id=child_id, reason="bad data")
    grpc_client.get_run_state(run_id=base, min_position=receipt.position)

    lineage = page(http, f"/runs/{child_id}").one("main").one(data_field="source")
    assert "retracted" in " ".join(lineage.texts) + lineage.one("a").text + str(lineage.attrs)
    row = page(http, f"/runs/{base}").one("main").one(data_live="children").one("tr", data_run_id=child_id)
    assert "retracted" in " ".join(cell.text for cell in row.all("td")) + str(row.attrs)


def test_a_byte_valued_metric_reads_in_bytes_units_in_the_metrics_table(
    http: httpx.Client, grpc_client: LedgerClient
) -> None:
    """A metric named *_bytes (system/process_rss_bytes) reads 49.8 MB, not 4.98e+07; others
    keep their numbers."""
    rss = [49_800_000.0, 51_200_000.0, 1_530_000_000.0, 512.0, 2_048.0, 49_812_345.0]
    run_id = _trained(grpc_client, "web-bytes", {"loss": [0.5] * 6, "system/process_rss_bytes": rss})
    grpc_client.get_run_state(run_id=run_id, min_position=grpc_client.get_run_state(run_id=run_id).position)
    table = page(http, f"/runs/{run_id}").one("main").one("table", class_="metrics")
    cells = [cell.text for cell in table.one("tr", data_metric="system/process_rss_bytes").all("td")]
    assert cells[4:] == ["49.81 MB", "512 B", "1.53 GB"]  # last, min, max
    assert [cell.text for cell in table.one("tr", data_metric="loss").all("td")][4:] == ["0.5", "0.5", "0.5"]
