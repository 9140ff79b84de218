"""Byte identity across two checkouts: the same commands, on the same keys and the same small
blocks, run by this checkout's code and by another's (``--baseline DIR``), and every file they
leave compared by SHA-256.

    python bench/same_bytes.py --baseline DIR [--packs 4] [--keep WORK] [--output-intent FILE.icc]

Made for a change that must not change behaviour (issue 28: the printer's side moved into
wings): ``git worktree add /tmp/before <commit>``, then this script with ``--baseline
/tmp/before``.  Each checkout's code runs as ``python -m printpipe`` with the checkout first on
``PYTHONPATH`` (the script prints where ``printpipe`` was imported from, to show it).

What runs, in one work folder per checkout, on one set of keys made once and copied to both:
two block stores (Chien Chat, ``--packs`` packs; Golden Animals, 2 packs) and their audits; the
proof packs (each game's, and real press sheets of the block); the lottery's approval of the
press proof; a digital export, a conventional one (static plates and PDF/VT imaging files) and
the online game's unit feed; each manifest's auditor's CSV, its verification, the feed's
verification, the preflight of both press folders, the validation codes.  Every command's
standard output is kept as a file and compared too.

The dates are fixed: ``SOURCE_DATE_EPOCH`` (every press file's and ``job.json``'s date), and
the approval is made through the library with that date as ``now``.  What cannot be equal is
said and checked another way: a secure manifest (``manifest.ppm``) is encrypted with age, which
draws a fresh file key each time, so two of them differ in every run; their plaintexts are
compared instead, through the auditor's CSV that ``manifest export`` decrypts and checks.  A
file that differs only by :data:`VARYING` (the time a command took, an age body's length) is
named apart; any other difference is listed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATE = "1767225600"
"""2026-01-01T00:00:00Z: every dated output's date."""
PROFILE = Path("/usr/share/color/icc/ghostscript/default_cmyk.icc")
"""The conventional run's output profile (Debian's Ghostscript CMYK profile), as in
``bench_export.py``."""
ENCRYPTED = "manifest.ppm"
"""A secure manifest: age-encrypted, a fresh file key each time; its plaintext is the CSV."""
VARYING = re.compile(rb'in \d+\.\d s|"seconds": \d+(?:\.\d+)?|age body: [\d,]+ bytes')
"""What two runs cannot share: the time a command took (its summary line's "in 1.3 s", a proof
pack's ``"seconds"``) and the length of a manifest's age body (``manifest verify``: age adds a
random-length grease stanza)."""

APPROVE = """
import sys
from pathlib import Path
from importlib import import_module
from printpipe.keys import LOTTERY_SIGNING_KEY, load_signing_key
code = Path(sys.argv[1])
home = "printpipe.handover.approval" if (code / "printpipe" / "handover").is_dir() else (
    "printpipe.approval")
key = load_signing_key(Path("keys"), LOTTERY_SIGNING_KEY)
path = import_module(home).approve_proof(
    Path("press-proof"), signing_key=key, approvals_dir=Path("approvals"), now=int(sys.argv[2]))
print(path.name)
"""


def commands(packs: int, profile: Path) -> list[tuple[str, list[str]]]:
    """Each step: its name (its standard output's file) and printpipe's arguments."""
    keys = ["--keys", "keys"]
    return [
        ("generate", ["generate", *keys, "--packs", f"1:{packs}", "--out", "blk", "-q"]),
        ("generate-ga", ["generate", "--game", "golden-animals", *keys, "--packs", "1:2",
                         "--out", "ga-block", "-q"]),
        ("audit", ["audit", "blk", *keys, "-q"]),
        ("audit-ga", ["audit", "ga-block", *keys, "-q"]),
        ("proof", ["proof", "--out", "proof", "-q"]),
        ("proof-ga", ["proof", "--game", "golden-animals", "--out", "ga-proof", "-q"]),
        ("proof-block", ["proof", "--out", "press-proof", "--from-block", "blk", *keys, "-q"]),
        ("approve", []),
        ("export", ["export", "blk", *keys, "--out", "print", "--approvals", "approvals",
                    "--workers", "2", "-q"]),
        ("export-line", ["export", "blk", *keys, "--out", "print-line", "--press",
                         "conventional", "--output-intent", str(profile),
                         "--approvals", "approvals", "--workers", "2", "-q"]),
        ("export-feed", ["export", "ga-block", *keys, "--out", "feed", "-q"]),
        ("csv-block", ["manifest", "export", f"blk/{ENCRYPTED}", *keys, "--csv", "block.csv"]),
        ("csv-print", ["manifest", "export", f"print/{ENCRYPTED}", *keys, "--csv", "print.csv"]),
        ("csv-line", ["manifest", "export", f"print-line/{ENCRYPTED}", *keys, "--csv",
                      "line.csv"]),
        ("csv-ga-block", ["manifest", "export", f"ga-block/{ENCRYPTED}", *keys, "--csv",
                          "ga-block.csv"]),
        ("csv-feed", ["manifest", "export", f"feed/{ENCRYPTED}", *keys, "--csv", "feed.csv"]),
        ("verify-print", ["manifest", "verify", f"print/{ENCRYPTED}", *keys]),
        ("verify-feed", ["feed", "verify", "feed/golden-animals-b0001-p000001-000002.feed"]),
        ("preflight", ["preflight", "print"]),
        ("preflight-line", ["preflight", "print-line"]),
        ("codes", ["codes", "print.csv", "--long"]),
    ]  # fmt: skip


def run_checkout(code: Path, work: Path, keys: Path, packs: int, profile: Path) -> None:
    """Every step with ``code``'s printpipe, in ``work``; stops at the first failure."""
    work.mkdir(parents=True)
    shutil.copytree(keys, work / "keys")
    (work / "stdout").mkdir()
    env = {**os.environ, "PYTHONPATH": str(code), "SOURCE_DATE_EPOCH": DATE}
    where = subprocess.run(
        [sys.executable, "-c", "import printpipe; print(printpipe.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    print(f"{code}: printpipe from {where}")
    for name, args in commands(packs, profile):
        argv = (
            [sys.executable, "-c", APPROVE, str(code), DATE]
            if name == "approve"
            else [sys.executable, "-m", "printpipe", *args]
        )
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{code}: {name} failed ({done.returncode}): {done.stderr.strip()}")
        (work / "stdout" / f"{name}.txt").write_text(done.stdout)


def digests(work: Path, *, timed: bool) -> dict[str, str]:
    """Every output file's SHA-256; with ``timed``, :data:`VARYING` masked first."""
    found = {}
    for path in sorted(work.rglob("*")):
        name = path.relative_to(work).as_posix()
        if not path.is_file() or name.startswith("keys/"):
            continue
        data = path.read_bytes()
        if timed:
            data = VARYING.sub(b"<varies>", data)
        found[name] = hashlib.sha256(data).hexdigest()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument("--packs", type=int, default=4, help="Chien Chat packs [default: 4]")
    parser.add_argument("--output-intent", type=Path, default=PROFILE, help="FILE.icc")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folders here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="same-bytes-")) if args.keep is None else args.keep
    keys = root / "keys"
    subprocess.run(
        [sys.executable, "-m", "printpipe", "keys", "init", str(keys)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True,
    )  # fmt: skip
    sides = {"baseline": args.baseline.resolve(), "this": ROOT}
    for side, code in sides.items():
        run_checkout(code, root / side, keys, args.packs, args.output_intent)
    before, after = digests(root / "baseline", timed=False), digests(root / "this", timed=False)
    masked = (digests(root / "baseline", timed=True), digests(root / "this", timed=True))
    if set(before) != set(after):
        print(f"only in the baseline: {sorted(set(before) - set(after))}")
        print(f"only in this checkout: {sorted(set(after) - set(before))}")
    common = sorted(set(before) & set(after))
    encrypted = [name for name in common if name.endswith(ENCRYPTED)]
    compared = [name for name in common if name not in encrypted]
    differ = [name for name in compared if before[name] != after[name]]
    timed = [name for name in differ if masked[0][name] == masked[1][name]]
    differ = [name for name in differ if name not in timed]
    kinds: dict[str, int] = {}
    for name in compared:
        kind = Path(name).suffix or Path(name).name
        kinds[kind] = kinds.get(kind, 0) + 1
    equal = len(compared) - len(timed) - len(differ)
    listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    print(f"{len(compared)} files compared by SHA-256 ({listed}): {equal} byte-identical")
    print(
        f"{len(encrypted)} secure manifests (age-encrypted: a fresh file key each run) "
        "compared by their plaintext, the auditor's CSVs above"
    )
    if timed:
        print(
            f"{len(timed)} of them equal once the time a command took ('in N.N s', a proof "
            "pack's \"seconds\") and an age body's length are masked: " + ", ".join(timed)
        )
    for name in differ:
        print(f"DIFFERS: {name}")
    if args.keep is None:
        shutil.rmtree(root)
    same = not differ and set(before) == set(after)
    print("no other difference" if same else f"{len(differ)} files differ")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
