"""A provider's bill from a file: the documented CSV and JSON format, Modal's own CLI exports (as
literal files, and made by the real `modal billing report` against the loopback FakeModalServer),
and files with bad rows: every bad row named with its line number (or object index), nothing
returned and nothing recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clients import LedgerClient, run_key
from clients.billing.files import BadRow, BillFileError, import_bill_file, load_bill_file, read_bill_file
from clients.models import BilledLine


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC) if day <= 30 else datetime(2026, 12, day - 30, hour, tzinfo=UTC)


# -- the format ---------------------------------------------------------------------------------

GOOD_CSV = """
    line_id,interval_start,interval_end,amount,currency,quantity,unit,run_id,account,session_id,tags,description
    gpu-7,2026-11-30T10:00:00Z,2026-11-30T11:00:00Z,3.95,USD,1,gpu_hours,run-1,,,team=nlp;env=prod,H100 hour
    storage,2026-11-30,2026-12-01,"$1,250.00",usd,12.5,gb_days,,acme-research,,"{""tier"": ""hot""}",bucket ckpt

    pending,2026-11-30T11:00:00+01:00,2026-11-30T12:00:00+01:00,,,,,,,sess-9,,not priced yet
"""

GOOD_LINES = [
    BilledLine(
        line_id="gpu-7",
        interval_start=at(30, 10),
        interval_end=at(30, 11),
        amount_usd_micro=3_950_000,
        amount_text="3.95",
        currency="USD",
        quantities={"gpu_hours": 1.0},
        run_id="run-1",
        tags={"team": "nlp", "env": "prod"},
        description="H100 hour",
    ),
    BilledLine(
        line_id="storage",
        interval_start=at(30),
        interval_end=at(31),
        amount_usd_micro=1_250_000_000,
        amount_text="$1,250.00",
        currency="USD",
        quantities={"gb_days": 12.5},
        account="acme-research",
        tags={"tier": "hot"},
        description="bucket ckpt",
    ),
    BilledLine(
        line_id="pending",
        interval_start=at(30, 10),
        interval_end=at(30, 11),
        amount_usd_micro=None,
        amount_text="",
        currency="USD",
        session_id="sess-9",
        description="not priced yet",
    ),
]


def test_csv(tmp_path) -> None:
    assert read_bill_file(write(tmp_path, "acme.csv", GOOD_CSV)) == GOOD_LINES


def test_json_list_and_lines_object(tmp_path) -> None:
    entries = """
        {"line_id": "gpu-7", "interval_start": "2026-11-30T10:00:00Z", "interval_end": "2026-11-30T11:00:00Z",
         "amount": 3.95, "currency": "USD", "quantity": 1, "unit": "gpu_hours", "run_id": "run-1",
         "tags": {"team": "nlp", "env": "prod"}, "description": "H100 hour"},
        {"line_id": "storage", "interval_start": "2026-11-30", "interval_end": "2026-12-01",
         "amount": "$1,250.00", "currency": "usd", "quantities": {"gb_days": 12.5}, "account": "acme-research",
         "tags": "{\\"tier\\": \\"hot\\"}", "description": "bucket ckpt"},
        {"line_id": "pending", "interval_start": "2026-11-30T11:00:00+01:00",
         "interval_end": "2026-11-30T12:00:00+01:00", "amount": null, "session_id": "sess-9",
         "description": "not priced yet"}
    """
    as_list = read_bill_file(write(tmp_path, "acme.json", f"[{entries}]"))
    as_object = read_bill_file(write(tmp_path, "acme-lines.json", f'{{"lines": [{entries}]}}'))
    assert as_list == GOOD_LINES
    assert as_object == GOOD_LINES
    # A JSON number is read from its literal: 0.0734 stays "0.0734" (never a float's digits).
    (line,) = read_bill_file(
        write(
            tmp_path,
            "number.json",
            '[{"line_id": "x", "interval_start": "2026-11-30", "interval_end": "2026-12-01", "amount": 0.0734}]',
        )
    )
    assert (line.amount_text, line.amount_usd_micro) == ("0.0734", 73_400)


def test_a_file_without_a_json_or_csv_suffix_is_recognised(tmp_path) -> None:
    assert read_bill_file(write(tmp_path, "acme.txt", GOOD_CSV)) == GOOD_LINES


# -- Modal's exports ----------------------------------------------------------------------------

RUN = "run-01JDXYZ"
MODAL_TAGS = {"trainledger_run_id": RUN, "trainledger_account": "team-nlp", "team": "nlp"}
MODAL_LINES = [
    BilledLine(
        line_id="ap-Tr41n/GPU (H100)",
        interval_start=at(30, 10),
        interval_end=at(30, 11),
        amount_usd_micro=3_950_000,
        amount_text="3.95",
        currency="USD",
        run_id=RUN,
        account="team-nlp",
        tags=MODAL_TAGS,
        description="a rather long description of the trainer app that runs sft (main)",
    ),
    BilledLine(
        line_id="ap-Tr41n/CPU",
        interval_start=at(30, 10),
        interval_end=at(30, 11),
        amount_usd_micro=0,
        amount_text="5E-7",
        currency="USD",
        run_id=RUN,
        account="team-nlp",
        tags=MODAL_TAGS,
        description="a rather long description of the trainer app that runs sft (main)",
    ),
]

# What `modal billing report --show-resources --tag-names '*' --csv > modal.csv` writes (modal
# 1.6): the console wraps each row at 80 characters, after a space or inside a long word.
MODAL_CSV = """
    Object ID,Description,Environment,Interval Start,Resource,Cost,Tags
    ap-Tr41n,a rather long description of the trainer app that runs sft,main,
    2026-11-30T10:00:00,GPU (H100),3.95,"{""trainledger_run_id"": ""run-01JDXYZ"",@
    ""trainledger_account"": ""team-nlp"", ""team"": ""nlp""}"
    ap-Tr41n,a rather long description of the trainer app that runs sft,main,
    2026-11-30T10:00:00,CPU,5E-7,"{""trainledger_run_id"": ""run-01JDXYZ"",@
    ""trainledger_account"": ""team-nlp"", ""team"": ""nlp""}"
""".replace("@", " ")  # the console leaves the space before a break at the end of a line

# The export's tags: a JSON object in a JSON string.
TAGS_TEXT = json.dumps(json.dumps(MODAL_TAGS))
MODAL_JSON = """
    [
      {
        "object_id": "ap-Tr41n",
        "description": "a rather long description of the trainer app that runs sft",
        "environment": "main",
        "interval_start": "2026-11-30T10:00:00",
        "resource": "GPU (H100)",
        "cost": "3.95",
        "tags": @TAGS@
      },
      {
        "object_id": "ap-Tr41n",
        "description": "a rather long description of the trainer app that runs sft",
        "environment": "main",
        "interval_start": "2026-11-30T10:00:00",
        "resource": "CPU",
        "cost": "5E-7",
        "tags": @TAGS@
      }
    ]
""".replace("@TAGS@", TAGS_TEXT)


def test_modal_cli_csv_and_json(tmp_path) -> None:
    csv_bill = load_bill_file(write(tmp_path, "modal.csv", MODAL_CSV))
    assert csv_bill.shape == "modal"
    assert csv_bill.lines == MODAL_LINES
    assert read_bill_file(write(tmp_path, "modal.json", MODAL_JSON)) == MODAL_LINES


def test_modal_cli_daily_plain_export(tmp_path) -> None:
    plain = '''
        Object ID,Description,Environment,Interval Start,Cost
        ap-1,trainer,main,2026-11-29T00:00:00,12.5
        sb-2,"sandbox, ""quoted""",,2026-11-30T00:00:00-05:00,0.25
    '''
    assert read_bill_file(write(tmp_path, "daily.csv", plain), resolution="d") == [
        BilledLine(
            line_id="ap-1",
            interval_start=at(29),
            interval_end=at(30),
            amount_usd_micro=12_500_000,
            amount_text="12.5",
            currency="USD",
            description="trainer (main)",
        ),
        BilledLine(
            line_id="sb-2",
            interval_start=at(30, 5),  # --tz -5: the export's offset, converted to UTC
            interval_end=at(31, 5),
            amount_usd_micro=250_000,
            amount_text="0.25",
            currency="USD",
            description='sandbox, "quoted"',
        ),
    ]


@pytest.mark.subprocess
def test_exports_made_by_the_real_modal_cli(tmp_path) -> None:
    pytest.importorskip("modal")
    from tests.fakes.modal_server import FakeModalServer

    with FakeModalServer() as fake:
        fake.add_item(
            object_id="ap-Tr41n",
            description="a rather long description of the trainer app that runs sft",
            environment_name="main",
            interval_start=at(30, 10),
            cost="3.9500005",
            cost_by_resource={"GPU (H100)": "3.95", "CPU": "0.0000005"},
            tags=MODAL_TAGS,
        )
        env = dict(
            os.environ,
            MODAL_SERVER_URL=fake.server_url,
            MODAL_TOKEN_ID=fake.TOKEN_ID,
            MODAL_TOKEN_SECRET=fake.TOKEN_SECRET,
            MODAL_CONFIG_PATH=str(tmp_path / "no-modal.toml"),
        )
        env.pop("COLUMNS", None)  # as redirected from a shell: the console's 80 columns
        exports = {}
        for option in ("--csv", "--json"):
            export = subprocess.run(
                [sys.executable, "-m", "modal", "billing", "report", "--start", "2026-11-30", "--end", "2026-12-01"]
                + ["-r", "h", "--show-resources", "--tag-names", "*", option],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            ).stdout
            exports[option] = export
            path = tmp_path / f"export{option.replace('--', '.')}"
            path.write_text(export, encoding="utf-8")
            lines = read_bill_file(path)
            # The report's resources come in no fixed order; the lines are the same.
            assert sorted(lines, key=lambda line: line.line_id) == sorted(MODAL_LINES, key=lambda line: line.line_id)
    # The CSV export was wrapped at 80 columns (3 physical lines a row), and read back whole.
    assert max(len(row) for row in exports["--csv"].splitlines()) <= 80
    assert len(exports["--csv"].splitlines()) > 1 + 2


# -- bad rows -----------------------------------------------------------------------------------

BAD_CSV = """
    line_id,interval_start,interval_end,amount,currency,run_id,description
    gpu-1,2026-11-30T09:00:00Z,2026-11-30T10:00:00Z,3.95,USD,,"H100 hour,
    first of the day"
    gpu-2,2026-11-30T10:00:00Z,2026-11-30T11:00:00Z,three,USD,,H100 hour
    gpu-3,2026-11-30T25:00:00Z,2026-11-30T12:00:00Z,3.95,USD,,H100 hour
    gpu-4,2026-11-30T12:00:00Z,2026-11-30T13:00:00Z,3.95,EUR,,H100 hour
    ,2026-11-30T13:00:00Z,2026-11-30T14:00:00Z,3.95,USD,,H100 hour
    gpu-6,2026-11-30T15:00:00Z,2026-11-30T14:00:00Z,3.95,,,H100 hour
    gpu-1,2026-11-30T09:00:00Z,2026-11-30T10:00:00Z,3.95,USD,,H100 hour again
    gpu-7,2026-11-30T16:00:00,2026-11-30T17:00:00Z,xx,GBP,,three problems
    gpu-8,2026-11-30T17:00:00Z,2026-11-30T18:00:00Z,1,USD
    storage,2026-11-30,2026-12-01,0.0734,,,bucket
"""

BAD_ROWS = [
    BadRow(4, "amount 'three' is not a decimal amount in dollars"),
    BadRow(5, "interval_start '2026-11-30T25:00:00Z' is not an RFC 3339 time or a date"),
    BadRow(6, "currency 'EUR' is not USD (only USD bills are recorded)"),
    BadRow(7, "line_id is missing"),
    BadRow(8, "interval_end 2026-11-30T14:00:00+00:00 is not after interval_start 2026-11-30T15:00:00+00:00"),
    BadRow(9, "repeats line 2 (the same line_id 'gpu-1' and interval)"),
    BadRow(
        10,
        "interval_start '2026-11-30T16:00:00' has no UTC offset (write Z or +00:00); "
        "amount 'xx' is not a decimal amount in dollars; "
        "currency 'GBP' is not USD (only USD bills are recorded)",
    ),
    BadRow(11, "has 5 fields, the header has 7"),
]


def test_every_bad_csv_row_is_named_with_its_line(tmp_path) -> None:
    path = write(tmp_path, "bad.csv", BAD_CSV)
    with pytest.raises(BillFileError) as refused:
        read_bill_file(path)
    assert refused.value.problems == BAD_ROWS
    message = str(refused.value)
    assert message.startswith(f"{path}: 8 bad rows, nothing read:\n  line 4: amount 'three'")
    assert "\n  line 11: has 5 fields, the header has 7" in message


def test_every_bad_json_object_is_named_with_its_index(tmp_path) -> None:
    hour = '"interval_start": "2026-11-30T09:00:00Z", "interval_end": "2026-11-30T10:00:00Z"'
    path = write(
        tmp_path,
        "bad.json",
        f"""
        [
          {{"line_id": "a", {hour}, "amount": "1"}},
          "not an object",
          {{"line_id": "b", {hour}}},
          {{"line_id": "c", {hour}, "amount": 1.5, "quantities": {{"gpu_hours": -1}}}},
          {{"line_id": "d", {hour}, "amount": "1", "tags": {{"a": {{"b": 1}}}}}},
          {{"line_id": "a", {hour}, "amount": "2"}},
          {{"line_id": "e", {hour}, "amount": "1", "currency": "EUR", "quantity": 2}}
        ]
        """,
    )
    with pytest.raises(BillFileError) as refused:
        read_bill_file(path)
    assert refused.value.problems == [
        BadRow(2, "is str, not an object", "object"),
        BadRow(3, "missing amount", "object"),
        BadRow(4, "quantities['gpu_hours'] -1 must be a finite number >= 0", "object"),
        BadRow(5, "tag 'a' must be text", "object"),
        BadRow(6, "repeats object 1 (the same line_id 'a' and interval)", "object"),
        BadRow(7, "currency 'EUR' is not USD (only USD bills are recorded); quantity without a unit", "object"),
    ]
    assert "\n  object 2: is str, not an object" in str(refused.value)


def test_files_that_are_not_bills(tmp_path) -> None:
    cases = {
        "empty.csv": ("", [BadRow(None, "the file is empty (a CSV file needs a header row)")]),
        "columns.csv": (
            "line_id,start,amount\n",
            [
                BadRow(1, "missing columns: interval_start, interval_end"),
                BadRow(
                    1,
                    "unknown column: start (known: line_id, interval_start, interval_end, amount, currency, quantity, "
                    "unit, run_id, account, session_id, tags, description, provider, quantities)",
                ),
            ],
        ),
        "object.json": ('{"rows": []}', [BadRow(None, 'a JSON bill is a list of objects, or {"lines": [...]}')]),
        "broken.json": (
            "[{]",
            [BadRow(None, "not JSON: Expecting property name enclosed in double quotes: line 1 column 3 (char 2)")],
        ),
    }
    for name, (text, problems) in cases.items():
        with pytest.raises(BillFileError) as refused:
            read_bill_file(write(tmp_path, name, text))
        assert refused.value.problems == problems, name
    with pytest.raises(ValueError, match="resolution must be"):
        read_bill_file(write(tmp_path, "ok.csv", GOOD_CSV), resolution="m")


def test_rows_of_another_provider_are_refused(tmp_path) -> None:
    path = write(
        tmp_path,
        "mixed.csv",
        """
        line_id,interval_start,interval_end,amount,provider
        a,2026-11-30,2026-12-01,1,acme
        b,2026-11-30,2026-12-01,1,other
        """,
    )
    assert [line.line_id for line in read_bill_file(path)] == ["a", "b"]
    with pytest.raises(BillFileError) as refused:
        read_bill_file(path, provider="acme")
    assert refused.value.problems == [BadRow(3, "provider 'other' is not 'acme'")]


def test_hostile_amounts_and_documents_are_bad_rows_not_crashes(tmp_path) -> None:
    header = "line_id,interval_start,interval_end,amount,tags\n"
    day = "2026-11-30,2026-12-01"
    deep = '"' + "[" * 50_000 + "]" * 50_000 + '"'  # A cell holds at most 131,072 characters.
    path = write(
        tmp_path,
        "hostile.csv",
        header
        + f"ok,{day},1,\n"
        + f"huge,{day},1e999999,\n"
        + f"wide,{day},1e30,\n"
        + f"arabic,{day},\u0661\u0662,\n"
        + f"fullwidth,{day},\uff11\uff12,\n"
        + f"underscore,{day},1_0,\n"
        + f"deep,{day},1,{deep}\n",
    )
    with pytest.raises(BillFileError) as refused:
        read_bill_file(path)
    assert [problem.number for problem in refused.value.problems] == [3, 4, 5, 6, 7, 8]
    assert "line 3: amount '1e999999' is not a decimal amount in dollars" in str(refused.value)
    assert "line 5: amount '\u0661\u0662' is not a decimal amount in dollars" in str(refused.value)
    assert "line 8: tags " in str(refused.value)


def test_commas_are_only_thousands_groups(tmp_path) -> None:
    day = "2026-11-30,2026-12-01"
    good = write(
        tmp_path,
        "good.csv",
        "line_id,interval_start,interval_end,amount\n"
        + f'a,{day},"1,000.00"\n'
        + f'b,{day},"$12,345"\n'
        + f"c,{day},$1.00\n"
        + f'd,{day},"-1,250.5"\n',
    )
    assert [line.amount_usd_micro for line in read_bill_file(good)] == [
        1_000_000_000,
        12_345_000_000,
        1_000_000,
        -1_250_500_000,
    ]
    bad = write(
        tmp_path,
        "bad.csv",
        "line_id,interval_start,interval_end,amount\n"
        + f'a,{day},"1,5"\n'
        + f'b,{day},"1,00"\n'
        + f'c,{day},"1000,000"\n'
        + f'd,{day},",100"\n'
        + f'e,{day},"1.000,5"\n'
        + f'f,{day},"1,000,"\n',
    )
    with pytest.raises(BillFileError) as refused:
        read_bill_file(bad)
    assert [problem.number for problem in refused.value.problems] == [2, 3, 4, 5, 6, 7]
    assert "line 2: amount '1,5' is not a decimal amount in dollars" in str(refused.value)


def test_a_json_bill_nested_deeply_or_with_a_huge_number_is_refused_whole(tmp_path) -> None:
    deep = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(BillFileError) as refused:
        read_bill_file(deep)
    assert [problem.number for problem in refused.value.problems] == [None]
    assert "nested" in str(refused.value)
    hour = '"interval_start": "2026-11-30T09:00:00Z", "interval_end": "2026-11-30T10:00:00Z"'
    numbers = write(
        tmp_path,
        "numbers.json",
        f'[{{"line_id": "a", {hour}, "amount": 1e999999}}, {{"line_id": "b", {hour}, "amount": {"9" * 5000}}}]',
    )
    with pytest.raises(BillFileError) as refused:
        read_bill_file(numbers)
    assert [problem.number for problem in refused.value.problems] == [1, 2]
    assert "object 1: amount '1E+999999' is not a decimal amount in dollars" in str(refused.value)


# -- against a real ledger ----------------------------------------------------------------------


def test_a_file_the_ledger_refuses_at_its_last_line_records_nothing(tmp_path, client: LedgerClient) -> None:
    # 5,001 rows: more than one request's worth. Only the ledger knows the longest interval a line
    # may bill; the last row's 400 days are refused, and the 5,000 rows before it are not recorded.
    rows = [f"r{n},2026-11-30T00:00:00Z,2026-11-30T01:00:00Z,0.01" for n in range(5_000)]
    rows.append("long,2026-01-01T00:00:00Z,2027-02-05T00:00:00Z,0.01")
    path = write(tmp_path, "long.csv", "line_id,interval_start,interval_end,amount\n" + "\n".join(rows) + "\n")
    head = client.get_head()
    with pytest.raises(BillFileError) as refused:
        import_bill_file(client, path, provider="acme")
    ((problem),) = refused.value.problems
    assert problem.number == 5_002
    assert "INVALID_INTERVAL" in problem.reason and "lines[" not in problem.reason
    assert f"{path}: 1 bad row, nothing recorded:\n  line 5002: " in str(refused.value)
    assert client.get_head() == head
    report = client.reconcile()
    assert [bill for bill in report.providers if bill.provider == "acme"] == []


def test_a_bad_file_records_nothing(tmp_path, client: LedgerClient) -> None:
    head = client.get_head()
    with pytest.raises(BillFileError) as refused:
        import_bill_file(client, write(tmp_path, "bad.csv", BAD_CSV), provider="acme")
    assert refused.value.problems == BAD_ROWS
    assert client.get_head() == head


def test_import_records_attributes_and_a_second_import_is_a_no_op(tmp_path, client: LedgerClient) -> None:
    client.open_account(account="acme-research")
    run_id = client.open_run(run_key=run_key({"t": str(uuid.uuid4())}), name="sft").state.run.run_id
    path = write(
        tmp_path,
        "acme.csv",
        f"""
        line_id,interval_start,interval_end,amount,run_id,account,description
        gpu-1,2026-11-30T09:00:00Z,2026-11-30T10:00:00Z,3.95,{run_id},,H100 hour
        gpu-2,2026-11-30T10:00:00Z,2026-11-30T11:00:00Z,1.0000005,{run_id},,H100 hour
        storage,2026-11-30,2026-12-01,0.0734,,acme-research,bucket
        stray,2026-11-30T10:00:00Z,2026-11-30T11:00:00Z,0.5,run-nobody-knows,,who
        """,
    )
    with pytest.raises(ValueError, match="name the provider"):
        import_bill_file(client, path)

    result = import_bill_file(client, path, provider="acme")
    assert (result.recorded, result.restated, result.unchanged, result.lines, result.requests) == (4, 0, 0, 4, 1)
    report = client.reconcile(min_position=result.position)
    (run,) = [row for row in report.runs if row.run_id == run_id]
    assert run.bill is not None and (run.bill.billed_usd_micro, run.bill.lines) == (4_950_000, 2)
    (account,) = [row for row in report.accounts if row.account == "acme-research"]
    assert account.bill is not None and account.bill.billed_usd_micro == 73_400
    (acme,) = [bill for bill in report.providers if bill.provider == "acme"]
    assert (acme.billed_usd_micro, acme.lines, acme.unattributed_usd_micro, acme.unattributed_lines) == (
        5_523_400,
        4,
        500_000,
        1,
    )
    assert [(g.provider, g.source, g.billed_usd_micro) for g in report.unattributed] == [
        ("acme", "run run-nobody-knows", 500_000)
    ]

    head = client.get_head()
    again = import_bill_file(client, path, provider="acme")
    assert (again.recorded, again.restated, again.unchanged) == (0, 0, 4)
    assert client.get_head() == head


def test_a_modal_export_is_recorded_as_modal(tmp_path, client: LedgerClient) -> None:
    result = import_bill_file(client, write(tmp_path, "modal.csv", MODAL_CSV))
    assert (result.recorded, result.lines) == (2, 2)
    report = client.reconcile(min_position=result.position)
    bills = [(bill.provider, bill.billed_usd_micro, bill.lines) for bill in report.providers]
    assert bills == [("modal", 3_950_000, 2)]
