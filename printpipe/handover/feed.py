"""The unit feed: what an export run of an online game hands to the game server.

An online game has no press: each unit is dealt by the game server, which needs, per unit, its
serial, its grids and its lot, in block order.  Why a fixed-size binary record: a unit is
found by arithmetic (``header end + index x record size``), a file is streamed without
parsing, and its size proves it is complete.  File format ``printpipe-feed/1``::

    magic            8 bytes   b"PPFEED1\\n"
    header length    4 bytes   uint32, little-endian: length of the JSON header
    header           UTF-8 JSON, sorted keys, no whitespace (game, block, range, symbol table,
                     fields, record layout); its length is part of the file
    records          one per unit, in block order, ``record_bytes`` each (little-endian):
                       0  uint32  group ("pack") number as in the serial, PPPPPP
                       4  uint16  unit number in the group, TTT
                       6  uint32  lot in EUR, as the rules give it
                      10  uint8[symbol_width]  symbol indices into the header's symbol table,
                          the game's fields in order (e.g. a grid, then an extra grid,
                          each row by row; an extra grid of the blank mark = no extra grid)

No timestamps, no randomness: the same block and range give the same bytes.  The file is
written under a temporary name, fsynced and renamed, a batch of groups at a time (bounded
memory).  A record is verifiable alone (regulation, article 5.1): its symbols, decoded with
the header's table, give its lot again by the game's ``evaluate``.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from printpipe.atomic import atomic_file
from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game, GameDefinition
from printpipe.ids import format_serial, gs1_check_digits_array, printed_pack_number
from printpipe.progress import progress_bar

FORMAT = "printpipe-feed/1"
MAGIC = b"PPFEED1\n"
BATCH_PACKS = 200
"""Groups encoded per batch: a few MB whatever the run's size."""
MAX_HEADER_BYTES = 1 << 20
_FIXED = np.dtype([("pack", "<u4"), ("unit", "<u2"), ("prize_eur", "<u4")])


def record_dtype(symbol_width: int) -> np.dtype:
    """The record layout: packed (no padding), little-endian."""
    return np.dtype([*_FIXED.descr, ("symbols", "u1", (symbol_width,))])


def feed_file_name(game_id: str, block: int, first_pack: int, last_pack: int) -> str:
    """File name of a run's feed, from its printed group numbers."""
    return f"{game_id}-b{block:04d}-p{first_pack:06d}-{last_pack:06d}.feed"


def feed_header(store: BlockStore, definition: GameDefinition, packs: PackRange) -> dict[str, Any]:
    rules = definition.block
    dtype = record_dtype(definition.symbol_width)
    return {
        "format": FORMAT,
        "game": {
            "id": definition.id,
            "number": definition.number,
            "definition_sha256": definition.source_sha256,
        },
        "block": store.block,
        "block_summary_sha256": hashlib.sha256(store.summary_bytes).hexdigest(),
        "packs": store.packs_header(packs),
        "first_unit": (packs.first - 1) * rules.pack_size + 1,
        "units": packs.count * rules.pack_size,
        "record_bytes": dtype.itemsize,
        "record": "pack uint32 LE, unit uint16 LE, prize_eur uint32 LE, symbols uint8[width]",
        "fields": [{"name": f.name, "width": f.width} for f in definition.fields],
        "symbol_codes": list(definition.symbol_codes),
        "blank_symbol": definition.records.blank_symbol,
    }


def encode_header(header: dict[str, Any]) -> bytes:
    body = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return MAGIC + struct.pack("<I", len(body)) + body


def iter_records(
    store: BlockStore, definition: GameDefinition, packs: PackRange
) -> Iterator[bytes]:
    """The records of ``packs``, a batch of groups at a time."""
    rules = definition.block
    dtype = record_dtype(definition.symbol_width)
    for start in range(packs.first, packs.last + 1, BATCH_PACKS):
        batch = PackRange(start, min(start + BATCH_PACKS - 1, packs.last))
        units = store.read(batch)
        n = len(units)
        records = np.zeros(n, dtype=dtype)
        index = np.arange(n, dtype=np.int64)
        records["pack"] = printed_pack_number(
            block=store.block,
            block_pack=batch.first + index // rules.pack_size,
            packs_per_block=rules.packs,
        )
        records["unit"] = index % rules.pack_size
        records["prize_eur"] = definition.tier_amounts[np.asarray(units.tier, dtype=np.int64)]
        records["symbols"] = np.asarray(units.symbols)
        yield records.tobytes()


def write_feed(
    path: Path, store: BlockStore, game: Game, packs: PackRange, show_progress: bool = False
) -> dict[str, Any]:
    """Write the feed of ``packs`` to ``path`` (temp name, fsync, rename); returns its entry."""
    definition = game.definition
    header = feed_header(store, definition, packs)
    digest = hashlib.sha256()
    size = 0
    with (
        atomic_file(path) as out,
        progress_bar(header["units"], "feed", "units", show_progress) as bar,
    ):
        out.write(head := encode_header(header))
        digest.update(head)
        size += len(head)
        for chunk in iter_records(store, definition, packs):
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            bar.update(len(chunk) // header["record_bytes"])
    first, last = header["packs"]["first_pack_number"], header["packs"]["last_pack_number"]
    return {
        "path": path.name,
        "sha256": digest.hexdigest(),
        "bytes": size,
        "kind": "feed",
        "format": FORMAT,
        "packs": {"first": packs.first, "last": packs.last},
        "units": header["units"],
        "record_bytes": header["record_bytes"],
        "first_serial": _serial_of(definition.number, first, 0),
        "last_serial": _serial_of(definition.number, last, definition.block.pack_size - 1),
    }


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedUnit:
    """One record, decoded: its serial, its fields as symbol codes, its recorded lot."""

    serial: str
    pack: int
    unit: int
    prize_eur: int
    symbols: np.ndarray
    fields: dict[str, list[str] | None]
    """Codes of each field; None for a field holding only the blank mark (no extra grid)."""


class FeedReader:
    """A feed file opened and checked: header, game, and a size of whole records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.handle: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise PrintpipeError(f"cannot read feed {path}: {exc.strerror}") from None
        try:
            self._read_header()
        except BaseException:
            self.handle.close()
            raise

    def _refuse(self, problem: str) -> PrintpipeError:
        return PrintpipeError(f"feed {self.path} refused: {problem}")

    def _read_header(self) -> None:
        start = self.handle.read(len(MAGIC) + 4)
        if len(start) != len(MAGIC) + 4 or not start.startswith(MAGIC):
            raise self._refuse(f"not a {FORMAT} file")
        (length,) = struct.unpack("<I", start[len(MAGIC) :])
        if length > MAX_HEADER_BYTES:
            raise self._refuse("malformed header length (damaged)")
        raw = self.handle.read(length)
        try:
            header = json.loads(raw)
            if header["format"] != FORMAT:
                raise ValueError
            self.codes: list[str] = list(header["symbol_codes"])
            self.fields = [(f["name"], int(f["width"])) for f in header["fields"]]
            self.dtype = record_dtype(sum(w for _, w in self.fields))
            if header["record_bytes"] != self.dtype.itemsize:
                raise ValueError
            self.units = int(header["units"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise self._refuse("the header is not a feed header (damaged)") from None
        self.header: dict[str, Any] = header
        self.offset = len(MAGIC) + 4 + length
        size = os.fstat(self.handle.fileno()).st_size
        if size != self.offset + self.units * self.dtype.itemsize:
            raise self._refuse(
                f"{size - self.offset} bytes of records, the header says "
                f"{self.units} x {self.dtype.itemsize} (truncated or damaged)"
            )

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> FeedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index_of(self, serial: str) -> int:
        """The record index of a unit given by its serial ``GGGG-PPPPPP-TTT-C``."""
        parts = serial.strip().split("-")
        if (
            len(parts) != 4
            or [len(p) for p in parts] != [4, 6, 3, 1]
            or not all(p.isdigit() for p in parts)
        ):
            raise PrintpipeError(f"{serial!r} is not a serial GGGG-PPPPPP-TTT-C")
        game, pack, unit, check = (int(p) for p in parts)
        packs = self.header["packs"]
        expected = gs1_check_digits_array(game, np.array([pack]), np.array([unit]))[0]
        if check != int(expected):
            raise PrintpipeError(f"serial {serial}: wrong check digit")
        if game != self.header["game"]["number"]:
            raise PrintpipeError(
                f"serial {serial} is not of game {self.header['game']['number']:04d}"
            )
        if not packs["first_pack_number"] <= pack <= packs["last_pack_number"] or not (
            0 <= unit < packs["pack_size"]
        ):
            raise PrintpipeError(
                f"unit {serial} is not in this feed (groups {packs['first_pack_number']:06d} to "
                f"{packs['last_pack_number']:06d})"
            )
        return (pack - packs["first_pack_number"]) * packs["pack_size"] + unit

    def records(self, start: int, count: int) -> np.ndarray:
        """``count`` raw records from index ``start``."""
        self.handle.seek(self.offset + start * self.dtype.itemsize)
        data = self.handle.read(count * self.dtype.itemsize)
        return np.frombuffer(data, dtype=self.dtype)

    def iter_batches(self, units: int = 1 << 16) -> Iterator[np.ndarray]:
        for start in range(0, self.units, units):
            yield self.records(start, min(units, self.units - start))

    def unit(self, index: int) -> FeedUnit:
        record = self.records(index, 1)[0]
        symbols = np.asarray(record["symbols"], dtype=np.int64)
        if symbols.max() >= len(self.codes):
            raise self._refuse(f"record {index + 1} holds a symbol outside the table")
        codes = [self.codes[s] for s in symbols.tolist()]
        blank = self.header.get("blank_symbol")
        fields: dict[str, list[str] | None] = {}
        start = 0
        for name, width in self.fields:
            part = codes[start : start + width]
            start += width
            fields[name] = None if blank is not None and set(part) == {blank} else part
        game = self.header["game"]["number"]
        pack, unit = int(record["pack"]), int(record["unit"])
        return FeedUnit(
            _serial_of(game, pack, unit),
            pack,
            unit,
            int(record["prize_eur"]),
            symbols,
            fields,
        )

    def check_game(self, game: Game) -> None:
        """The feed must be of this game's definition and use its symbol table."""
        d = game.definition
        if self.header["game"]["id"] != d.id:
            raise self._refuse(f"it is of game {self.header['game']['id']!r}, not {d.id}")
        if self.header["game"]["definition_sha256"] != d.source_sha256:
            raise self._refuse(f"it was made with another definition of {d.id} than this one")
        if self.codes != list(d.symbol_codes):
            raise self._refuse("its symbol table is not the game's")


def _serial_of(game: int, pack: int, unit: int) -> str:
    check = gs1_check_digits_array(game, np.array([pack]), np.array([unit]))
    return format_serial(game, pack, unit, int(check[0]))


def verify_feed(reader: FeedReader, game: Game) -> dict[str, int]:
    """Re-check every record: block order, and its lot by the rules.  Raises on the first fault."""
    reader.check_game(game)
    packs = reader.header["packs"]
    size = packs["pack_size"]
    seen = winners = total = 0
    for batch in reader.iter_batches():
        index = seen + np.arange(len(batch), dtype=np.int64)
        if (batch["pack"] != packs["first_pack_number"] + index // size).any() or (
            batch["unit"] != index % size
        ).any():
            raise reader._refuse(
                f"a record in units {seen + 1} to {seen + len(batch)} is out of place"
            )
        symbols = np.asarray(batch["symbols"], dtype=np.int64)
        result = game.evaluate(np.zeros(len(batch), dtype=np.int64), symbols)
        wrong = np.flatnonzero(result.prize_eur != batch["prize_eur"].astype(np.int64))
        if len(wrong):
            i = int(wrong[0])
            game_number = reader.header["game"]["number"]
            serial = _serial_of(game_number, int(batch["pack"][i]), int(batch["unit"][i]))
            raise reader._refuse(
                f"unit {serial}: the rules give {int(result.prize_eur[i])} EUR, "
                f"the record says {int(batch['prize_eur'][i])}"
            )
        seen += len(batch)
        winners += int((batch["prize_eur"] > 0).sum())
        total += int(batch["prize_eur"].astype(np.int64).sum())
    return {"units": seen, "winning_units": winners, "prize_eur": total}


@dataclass(frozen=True)
class CheckedUnit:
    """``printpipe feed show``: one unit of a feed, and its lot recomputed by the rules."""

    unit: FeedUnit
    game_id: str
    block: int
    rules_prize_eur: int

    @property
    def matches(self) -> bool:
        return self.rules_prize_eur == self.unit.prize_eur


def check_unit(path: Path, *, serial: str) -> CheckedUnit:
    """Open the feed at ``path``, find unit ``serial`` and evaluate its symbols by the rules of
    the feed's game. A unit whose symbols break a rule is refused."""
    from printpipe.games import load_game

    with FeedReader(path) as reader:
        game = load_game(reader.header["game"]["id"])
        reader.check_game(game)
        unit = reader.unit(reader.index_of(serial))
        block = int(reader.header["block"])
    result = game.evaluate(np.zeros(1, dtype=np.int64), unit.symbols[None, :].astype(np.int64))
    if result.violation[0]:
        raise PrintpipeError(
            f"unit {unit.serial}: its symbols break a rule: {game.violations[result.violation[0]]}"
        )
    return CheckedUnit(unit, game.definition.id, block, int(result.prize_eur[0]))


def verify_feed_file(path: Path) -> dict[str, int]:
    """``printpipe feed verify``: every unit of the feed at ``path`` re-checked (see
    :func:`verify_feed`), by its own game's rules."""
    from printpipe.games import load_game

    with FeedReader(path) as reader:
        return verify_feed(reader, load_game(reader.header["game"]["id"]))
