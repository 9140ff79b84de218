"""The command line's parameter types (printpipe/cli/params.py) and the auditor's CSV codes."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from printpipe.block import PackRange
from printpipe.cli import cli
from printpipe.cli.params import BLOCK_RANGE, COATING, COATINGS, PACK_RANGE, PRESS_SHEET, SHEET_LIST
from printpipe.errors import PrintpipeError
from printpipe.handover import ticket_codes
from printpipe.ids import TicketId, mod97_is_valid
from printpipe.render.imposition import PressSheet
from printpipe.render.template import Coating


@given(st.integers(1, 20_000), st.integers(0, 20_000))
def test_pack_ranges_parse_to_pack_range(first, extra):
    assert PACK_RANGE.convert(f"{first}:{first + extra}", None, None) == PackRange(
        first, first + extra
    )


@pytest.mark.parametrize("text", ["0:5", "5:3", "abc", "7", "1:", ":4", "-1:3"])
def test_bad_pack_ranges_are_usage_errors(text):
    with pytest.raises(click.BadParameter, match="pack range"):
        PACK_RANGE.convert(text, None, None)


def test_block_ranges():
    assert BLOCK_RANGE.convert("3", None, None) == range(3, 4)
    assert BLOCK_RANGE.convert("1:10", None, None) == range(1, 11)
    for bad in ("0:2", "5:4", "1:1000", "x"):
        with pytest.raises(click.BadParameter, match="block range"):
            BLOCK_RANGE.convert(bad, None, None)


def test_press_sheets_sheet_lists_and_coatings():
    assert PRESS_SHEET.convert("sra3", None, None) == PressSheet("sra3", 320.0, 450.0)
    assert PRESS_SHEET.convert("330x480", None, None) == PressSheet("330x480", 330.0, 480.0)
    with pytest.raises(click.BadParameter, match="sheet size"):
        PRESS_SHEET.convert("A9", None, None)
    assert SHEET_LIST.convert("1,3,5-7", None, None) == [1, 3, 5, 6, 7]
    with pytest.raises(click.BadParameter, match="sheet list"):
        SHEET_LIST.convert("2-1", None, None)
    assert set(COATINGS) == {c.value for c in Coating}
    assert COATING.convert("none", None, None) is Coating.NONE
    with pytest.raises(click.BadParameter):
        COATING.convert("panel", None, None)


def test_a_bad_value_is_one_usage_line_naming_the_option(tmp_path):
    result = CliRunner().invoke(cli, ["generate", "--blocks", "9:1", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--blocks" in result.output and "block range '9:1'" in result.output
    assert not any(tmp_path.iterdir())


def test_press_commands_hand_the_library_typed_values(tmp_path, monkeypatch):
    """export, proof and run turn their strings into a PackRange, a PressSheet, a Coating and
    a list of sheets; the library is called with keyword arguments only."""
    import printpipe.generation
    import printpipe.press
    import printpipe.proof

    calls: dict[str, dict] = {}

    def export_block(**kwargs):
        calls["export"] = kwargs
        return {"tickets": 1, "packs": {"first": 1, "last": 1}, "files": [], "manifest": "m"}

    def make_proof(**kwargs):
        calls["proof"] = kwargs
        record = {"pdf": "p.pdf", "pages": 1, "specimens": [], "previews": [], "seconds": 0}
        return {**record, "press_proof": None, "plot": None}

    monkeypatch.setattr(printpipe.press, "export_block", export_block)
    monkeypatch.setattr(printpipe.proof, "make_proof", make_proof)
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["export", str(tmp_path / "b"), "--out", str(tmp_path / "o"), "--packs", "3:9",
         "--sheet", "330x480", "--coating", "none"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    export = calls["export"]
    assert export["packs"] == PackRange(3, 9)
    assert export["sheet"] == PressSheet("330x480", 330.0, 480.0)
    assert export["coating"] is Coating.NONE
    assert export["block_dir"] == tmp_path / "b" and export["out_dir"] == tmp_path / "o"

    result = runner.invoke(cli, ["export", "b", "--out", "o"])
    assert result.exit_code == 0, result.output
    assert calls["export"]["packs"] is None and calls["export"]["coating"] is Coating.PLATE
    assert calls["export"]["sheet"] == PressSheet("SRA3", 320.0, 450.0)

    result = runner.invoke(
        cli,
        ["proof", "--out", "p", "--from-block", "b", "--packs", "2:4", "--sheets", "1,3-4",
         "--sheet", "A3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    press = calls["proof"]["press"]
    assert (press.packs, press.sheets) == (PackRange(2, 4), (1, 3, 4))
    assert press.sheet == PressSheet("A3", 297.0, 420.0) and press.coating is Coating.PLATE

    class Report:
        passed = True

        def render(self) -> str:
            return "AUDIT PASSED"

    monkeypatch.setattr(
        printpipe.generation,
        "generate_emission",
        lambda game_id, **kwargs: printpipe.generation.Emission([], [1], 0.0),
    )
    monkeypatch.setattr(printpipe.generation, "audit_store", lambda block_dir, **kwargs: Report())
    monkeypatch.setattr(printpipe.press, "approve_demo_proof", lambda game_id, **kw: None)
    result = runner.invoke(cli, ["run", "--out", str(tmp_path), "--packs", "5:6"])
    assert result.exit_code == 0, result.output
    assert calls["export"]["packs"] == PackRange(5, 6)
    assert calls["export"]["sheet"].name == "SRA3" and calls["export"]["coating"] is Coating.PLATE


def _csv(
    tmp_path, rows, header="serial,game,block,pool,pack,ticket,effigy,paws,bonus,prize_eur,virn"
):
    path = tmp_path / "audit.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _row(pack, ticket, prize, virn):
    serial = TicketId(412, pack, ticket).serial
    return (
        f"{serial},0412,1,1,{pack:06d},{ticket:03d},CHIEN,A B C D E F G H I,J K,{prize},{virn:010d}"
    )


def test_codes_of_an_auditor_csv(tmp_path):
    path = _csv(tmp_path, [_row(1, 0, 0, 17), _row(1, 1, 10, 42), _row(2, 0, 10, 99)])
    codes = ticket_codes(path, prize_eur=10)
    assert [c.serial for c in codes] == [TicketId(412, 1, 1).serial, TicketId(412, 2, 0).serial]
    assert all(mod97_is_valid(c.validation_code) for c in codes)
    assert codes[0].validation_code == TicketId(412, 1, 1).validation_code(42)
    assert ticket_codes(path, pack=1, count=1)[0].prize_eur == 0
    with pytest.raises(PrintpipeError, match=r"no ticket .* \(pack 000002, losing\)"):
        ticket_codes(path, pack=2, prize_eur=0)


def test_codes_refuse_what_is_not_an_auditor_csv_of_paper_tickets(tmp_path):
    online = _csv(tmp_path, ["x"], header="serial,game,block,pool,unit,grid,extra_grid,prize_eur")
    with pytest.raises(PrintpipeError, match="no virn column"):
        ticket_codes(online)
    good = TicketId(412, 1, 1).serial
    bad = good[:-1] + str((int(good[-1]) + 1) % 10)
    wrong = _csv(tmp_path, [_row(1, 1, 10, 42).replace(good, bad)])
    with pytest.raises(PrintpipeError, match="does not match"):
        ticket_codes(wrong)
    with pytest.raises(PrintpipeError, match="cannot read"):
        ticket_codes(tmp_path / "missing.csv")


@given(st.text(max_size=12))
@example("1\x1f")  # str.strip strips the unit separator: float does not
def test_a_wait_in_the_environment_is_seconds_or_one_line_naming_it(text):
    """Whatever the variable holds: its seconds (above 0, at most the bound), the default
    when it is empty, or an InvalidInput naming the variable; never another exception."""
    import os
    from unittest import mock

    from printpipe.errors import InvalidInput, seconds_from_environment

    if "\x00" in text:
        return  # the environment cannot hold it
    with mock.patch.dict(os.environ, {"PRINTPIPE_TEST_WAIT_S": text}):
        try:
            seconds = seconds_from_environment("PRINTPIPE_TEST_WAIT_S", 7.0, most=60.0)
        except InvalidInput as exc:
            assert str(exc).startswith("PRINTPIPE_TEST_WAIT_S=") and "\n" not in str(exc)
            return
    if not text.strip():
        assert seconds == 7.0
    else:
        assert 0 < seconds <= 60 and seconds == float(text.strip())  # str.strip: "\x1f" too


@pytest.mark.parametrize(
    ("variable", "command"),
    [("PRINTPIPE_WALLET_CLAIM_S", "play"), ("PRINTPIPE_WALLET_MAX_WAIT_S", "play"),
     ("PRINTPIPE_WALLET_MAX_WAIT_S", "play reconcile")],
)  # fmt: skip
def test_a_game_server_given_a_wait_that_is_not_seconds_says_so_in_one_line(
    tmp_path, variable, command
):
    """The outbox's waits are read when the game server loads it, its wallet client's before
    the ledger is opened: a wrong one is one line, exit 2, not a traceback (a subprocess:
    this process has loaded both already)."""
    from tests.conftest import run_cli

    key = tmp_path / "game.key"
    key.touch()
    keys = ["--keys", str(tmp_path)] if command == "play" else ["--day", "2026-01-01"]
    result = run_cli(*command.split(), "--db", str(tmp_path / "none.sqlite"), *keys,
                     "--wallet", "http://127.0.0.1:9", "--wallet-key", str(key),
                     env={variable: "soon"}, subprocess_=True)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"printpipe: error: {variable}='soon' is not a number of seconds above 0 and up to 3600\n"
    )
    assert not (tmp_path / "none.sqlite").exists()
