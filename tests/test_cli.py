"""The command line as a user meets it: one clear line for every mistake, no tracebacks."""

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import click
import pytest

from printpipe.block import PackRange
from printpipe.keys import (
    KEY_FILES,
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    ensure_demo_keys,
    load_public_key,
    load_signing_key,
)
from tests.conftest import (
    MAIN_JOB,
    as_from_a_shell,
    assert_preflight_passes,
    cli_commands,
    run_cli,
    wait_for_files,
)

ROOT = Path(__file__).resolve().parent.parent


def assert_one_line_error(result, *fragments):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_keys_init_creates_private_files_once(tmp_path):
    target = tmp_path / "keys"
    result = run_cli("keys", "init", str(target), check=True)
    assert sorted(p.name for p in target.iterdir()) == sorted(KEY_FILES)
    for name in KEY_FILES:
        assert stat.S_IMODE((target / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    secret = (target / "producer.secret").read_bytes()
    assert len(secret) == 32 and secret.hex() not in result.stdout
    assert "AGE-SECRET-KEY-" in (target / "lottery.age").read_text()
    again = run_cli("keys", "init", str(target))
    assert_one_line_error(again, "already exists", "never overwritten")


def test_demo_keys_of_an_earlier_version_gain_the_lottery_signing_pair(tmp_path):
    demo = tmp_path / "demo"
    ensure_demo_keys(demo)
    secret = (demo / "producer.secret").read_bytes()
    for name in (LOTTERY_SIGNING_KEY, LOTTERY_SIGNING_PUB):
        (demo / name).unlink()
    ensure_demo_keys(demo)
    assert (demo / "producer.secret").read_bytes() == secret  # nothing else is touched
    key = load_signing_key(demo, LOTTERY_SIGNING_KEY)
    signature = key.sign(b"approved")
    load_public_key(demo / LOTTERY_SIGNING_PUB).verify(signature, b"approved")
    assert stat.S_IMODE((demo / LOTTERY_SIGNING_KEY).stat().st_mode) == 0o600


def test_generate_and_audit_a_pack_range(tmp_path, keys_dir):
    out = tmp_path / "block"
    result = run_cli(
        "generate",
        "--keys",
        str(keys_dir),
        "--out",
        str(out),
        "--packs",
        "3:6",
        "--quiet",
        check=True,
    )
    assert "generated 500 tickets" in result.stdout
    audited = run_cli("audit", str(out), "--keys", str(keys_dir), "--quiet")
    assert audited.returncode == 0, audited.stdout
    assert "AUDIT PASSED" in audited.stdout


def test_audit_without_the_right_producer_key_fails(tmp_path, keys_dir):
    out = tmp_path / "block"
    run_cli(
        "generate", "--keys", str(keys_dir), "--out", str(out), "--packs", "1:1", "-q", check=True
    )
    other = tmp_path / "other-keys"
    run_cli("keys", "init", str(other), check=True)
    audited = run_cli("audit", str(out), "--keys", str(other), "-q")
    assert audited.returncode == 1 and "AUDIT FAILED" in audited.stdout
    assert "signature" in audited.stdout.split("AUDIT FAILED")[1]


@pytest.mark.parametrize("packs", ["0:5", "5:3", "1:12001", "abc", "7"])
def test_bad_pack_ranges(tmp_path, keys_dir, packs):
    """Malformed (``abc``, ``5:3``) or outside the block (``1:12001``): the same usage code."""
    out = tmp_path / "block"
    result = run_cli("generate", "--keys", str(keys_dir), "--out", str(out), "--packs", packs)
    assert_one_line_error(result, "pack range")
    assert result.returncode == 2
    assert not out.exists()


def test_missing_and_short_key_files(tmp_path, keys_dir):
    out = tmp_path / "block"
    missing = run_cli("generate", "--keys", str(tmp_path / "nowhere"), "--out", str(out))
    assert_one_line_error(missing, "producer.secret", "not found")
    short = tmp_path / "short"
    run_cli("keys", "init", str(short), check=True)
    (short / "lottery.secret").write_bytes(b"\x01" * 16)
    result = run_cli("generate", "--keys", str(short), "--out", str(out))
    assert_one_line_error(result, "lottery.secret", "exactly 32 bytes", "16")
    os.chmod(short / "lottery.secret", 0o644)
    result = run_cli("generate", "--keys", str(short), "--out", str(out))
    assert_one_line_error(result, "readable by others")
    assert not out.exists()


def test_a_missing_terminal_key_names_the_command_that_makes_it(tmp_path):
    code = "0412000001001045981740166"
    key = tmp_path / "till.key"
    result = run_cli("terminal", "validate", code, "--server", "http://127.0.0.1:9", "--key",
                     str(key))  # fmt: skip
    assert_one_line_error(result, str(key), "not found", f"printpipe terminal keygen {key}")
    assert "keys init" not in result.stderr
    pub = tmp_path / "till.key.pub"
    result = run_cli("terminals", "add", "shop-1:till-1", "--db", str(tmp_path / "l.sqlite"),
                     "--retailer", "shop-1", "--public-key", str(pub))  # fmt: skip
    assert_one_line_error(result, "till.key.pub", "not found", "printpipe terminal keygen FILE")
    assert not (tmp_path / "l.sqlite").exists()


def test_corrupt_definition_and_unknown_game(tmp_path, keys_dir):
    from printpipe.games import game_template_dir

    text = (game_template_dir("chien-chat") / "game.toml").read_text(encoding="utf-8")
    broken = tmp_path / "game.toml"
    broken.write_text(text.replace("lots = 200\n", "lots = 201\n"), encoding="utf-8")
    out = tmp_path / "block"
    result = run_cli(
        "generate", "--keys", str(keys_dir), "--out", str(out), "--definition", str(broken)
    )
    assert_one_line_error(result, "field prizes", "437,317")
    unknown = run_cli("generate", "--game", "loto", "--keys", str(keys_dir), "--out", str(out))
    assert_one_line_error(unknown, "unknown game 'loto'")
    assert not out.exists()


def test_unwritable_output_and_existing_store(tmp_path, keys_dir):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_cli(
        "generate", "--keys", str(keys_dir), "--out", str(blocker / "block"), "--packs", "1:1"
    )
    assert_one_line_error(result, "cannot write")
    out = tmp_path / "block"
    run_cli(
        "generate", "--keys", str(keys_dir), "--out", str(out), "--packs", "1:1", "-q", check=True
    )
    again = run_cli("generate", "--keys", str(keys_dir), "--out", str(out), "--packs", "1:1")
    assert_one_line_error(again, "already exists", "--force")


def test_audit_of_a_missing_store(tmp_path, keys_dir):
    result = run_cli("audit", str(tmp_path / "nothing"), "--keys", str(keys_dir))
    assert_one_line_error(result, "not a block store")


@pytest.mark.fullblock
def test_interrupted_generation_leaves_nothing_that_looks_finished(tmp_path, keys_dir):
    out = tmp_path / "block"
    process = subprocess.Popen(
        [sys.executable, "-m", "printpipe", "generate", "--keys", str(keys_dir), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_from_a_shell,
    )
    wait_for_files(process, tmp_path, ".block.partial-*")  # generating: the partial store open
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 130
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.fullblock
@MAIN_JOB
def test_the_main_job_on_defaults(main_job, monkeypatch):
    result, folder = main_job.result, main_job.folder
    assert result.returncode == 0, result.stderr
    assert "created DEMO keys in printpipe-demo-keys" in result.stderr
    lines = result.stdout.splitlines()  # generated, audited (one line), exported
    assert len(lines) == 3 and lines[1].endswith("checks; AUDIT PASSED"), result.stdout
    assert "\r" not in result.stderr  # no progress bar
    assert (folder / "printpipe-out" / "chien-chat-block-0001" / "summary.json").exists()
    assert "demo keys: made the proof pack printpipe-out/chien-chat-proof and approved it" in (
        result.stderr
    )
    (approval,) = (folder / "printpipe-approvals").glob("chien-chat-*.approval.json")
    job = json.loads(
        (folder / "printpipe-out" / "chien-chat-block-0001-print" / "job.json").read_text()
    )
    assert job["approval"]["file"] == approval.name
    assert_preflight_passes(folder / "printpipe-out" / "chien-chat-block-0001-print")
    assert_the_readme_says_what_the_main_job_leaves(folder)
    monkeypatch.setattr("printpipe.generation.audit_store", main_job.audits)
    rerun = run_cli("run", "--quiet", cwd=folder)
    assert rerun.returncode == 0 and "DEMO keys" not in rerun.stderr
    assert "demo keys: the proof of these inputs is approved" in rerun.stderr
    assert "block store printpipe-out/chien-chat-block-0001 exists: keeping it" in rerun.stderr
    assert rerun.stdout.splitlines()[0] == lines[1]  # the kept block audited again: passed
    assert rerun.stdout.splitlines()[1].startswith("nothing to render: the 25,000 tickets")
    assert main_job.audits.real == 1 and main_job.audits.remembered == 1


def _disk_usage(path: Path) -> int:
    """Bytes on disk, as ``du`` counts them (every file's and folder's blocks)."""
    paths = [path, *path.rglob("*")]
    return sum(p.lstat().st_blocks * 512 for p in paths)


def assert_the_readme_says_what_the_main_job_leaves(folder: Path) -> None:
    """The README's table of what ``printpipe run`` leaves: the same folders (the three at the
    top, git-ignored, and those in them), each of about the size it says (within 10 %; a
    folder under 1 MiB, within a factor 2: a file system's block size decides)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(printpipe-[\w./-]+)/` \|.*\| ([\d,]+) (KiB|MiB) \|$", readme, re.M)
    said = {name: int(size.replace(",", "")) << (10 if unit == "KiB" else 20)
            for name, size, unit in rows}  # fmt: skip
    top = {name for name in said if "/" not in name}
    assert sorted(p.name for p in folder.iterdir()) == sorted(top) and len(top) == 3
    assert "three folders of the current one" in readme
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert all(f"{name}/" in ignored for name in top), ignored
    inside = {f"printpipe-out/{p.name}" for p in (folder / "printpipe-out").iterdir()}
    assert inside == {name for name in said if name.startswith("printpipe-out/")}
    for name, size in said.items():
        used = _disk_usage(folder / name)
        low, high = (0.9, 1.1) if size >= 1 << 20 else (0.5, 2.0)
        assert low * size <= used <= high * size, (name, used, size)
    total = re.search(r"and leaves ([\d,]+) MiB\s+on disk", readme)
    assert total is not None
    used = sum(_disk_usage(folder / name) for name in top)
    assert abs(used / (int(total[1].replace(",", "")) << 20) - 1) <= 0.1, used


@pytest.mark.parametrize(
    "args", [("export",), ("generate", "--block", "0"), ("frobnicate",), ("validate",)]
)
def test_usage_errors_are_one_line(args):
    """From the installed entry point, as a user sees them."""
    result = run_cli(*args, subprocess_=True)
    assert result.returncode == 2
    assert_one_line_error(result, "(see printpipe")


def _stderr_of(run, *, terminal: bool) -> str:
    """What ``run()`` writes on stderr when stderr is a terminal (a pseudo-terminal, read as a
    user's terminal shows it), or a pipe."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    reading, writing = pty.openpty() if terminal else os.pipe()
    if terminal:  # a terminal's size: 24 rows of 100 columns (a new pseudo-terminal has 0 x 0)
        fcntl.ioctl(writing, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(reading, 4096)
            except OSError:  # the terminal closed (EIO)
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    before = sys.stderr
    with open(writing, "w") as stream:
        sys.stderr = stream
        try:
            run()
        finally:
            sys.stderr = before
    reader.join(timeout=60)
    os.close(reading)
    return seen.decode(errors="replace")


def test_progress_bars_show_on_a_terminal_only():
    """A long run's bar (past its 0.5 s delay) shows on a terminal, with its rate; not with
    --quiet (``enabled=False``), and never where stderr is a file or a pipe (a log, CI)."""
    import time

    from printpipe.progress import SHOW_AFTER_S, progress_bar

    def run(enabled: bool = True) -> None:
        with progress_bar(4, "step", "things", enabled) as bar:
            for _ in range(4):
                time.sleep(SHOW_AFTER_S / 2)
                bar.update(1)

    shown = _stderr_of(run, terminal=True)
    assert "step: 100%" in shown and "4.00/4.00" in shown and "things/s" in shown, shown
    assert _stderr_of(lambda: run(enabled=False), terminal=True) == ""
    assert _stderr_of(run, terminal=False) == ""


def test_commands_show_no_progress_bar_where_stderr_is_not_a_terminal(
    tmp_path, keys_dir, monkeypatch
):
    """Generate, audit and export, without --quiet, with stderr captured (CliRunner's stream:
    not a terminal) and the bars' delay set to none: stderr stays empty."""
    monkeypatch.setattr("printpipe.progress.SHOW_AFTER_S", 0)
    block = str(tmp_path / "blk")
    for args in (
        ["generate", "--keys", str(keys_dir), "--packs", "1:8", "--out", block],
        ["audit", block, "--keys", str(keys_dir)],
        ["export", block, "--keys", str(keys_dir), "--out", str(tmp_path / "print"),
         "--unapproved", "--workers", "1"],
    ):  # fmt: skip
        result = run_cli(*args, check=True)
        assert result.stderr == "", (args, result.stderr)


START_UP = """
import sys
from pathlib import Path
from printpipe.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"reportlab", "numpy", "cryptography"}
                or m.startswith(("printpipe.ledger", "printpipe.service", "printpipe.render",
                                 "printpipe.block", "printpipe.handover", "printpipe.generation",
                                 "printpipe.proof", "printpipe.press")))
print("loaded:", ",".join(loaded))
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_load_no_stage(args):
    """``printpipe --help`` lists every command without importing one: no reportlab, numpy,
    cryptography, no stage of the printer's side nor the ledger or service (each command imports
    what it uses when it runs)."""
    result = subprocess.run(
        [sys.executable, "-c", START_UP, *args], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "loaded: ", result.stdout
    if args == ["--help"]:
        from printpipe.cli import COMMANDS

        assert all(f"  {name} " in result.stdout for name in COMMANDS)


def test_every_listed_command_is_the_command_of_that_name():
    import click

    from printpipe.cli import COMMANDS, cli

    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name, name
    assert cli.get_command(context, "frobnicate") is None


def test_a_missing_keys_folder_is_named_with_the_option_that_names_another(tmp_path, keys_dir):
    """Without --keys, the default folder is looked in: the error names it and says how to
    name the right one, never ``keys init`` (new keys open nothing made with the old ones)."""
    result = run_cli("manifest", "verify", "x.ppm", cwd=tmp_path)
    assert_one_line_error(
        result, "producer-signing.pub", "no folder printpipe-demo-keys/, the default", "--keys DIR"
    )
    assert "keys init" not in result.stderr
    partial = tmp_path / "partial"
    partial.mkdir()
    result = run_cli("generate", "--keys", str(partial), "--out", str(tmp_path / "blk"))
    assert_one_line_error(result, "producer.secret", f"looked in {partial}/", "--keys DIR")
    assert "keys init" not in result.stderr and "the default" not in result.stderr
    assert not (tmp_path / "blk").exists()


def test_bare_printpipe_and_a_bare_group_show_their_help_not_an_error():
    for args in ((), ("ledger",)):
        result = run_cli(*args)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert result.stdout.startswith(f"Usage: printpipe {' '.join(args)}".rstrip() + " ")


def test_printpipe_help_points_to_the_readme_and_the_tutorial():
    result = run_cli("--help", check=True)
    assert "README" in result.stdout and "docs/tutorial.md" in result.stdout


def test_every_command_help_ends_with_an_example_that_parses(tmp_path, monkeypatch):
    """``printpipe X --help`` ends with how the tutorial runs X, and the example is a command
    line X accepts (its options, their types), in a folder holding the files it names; a
    group's (``printpipe ledger --help``) with its commands' first steps."""
    import shlex

    from printpipe.cli import cli

    monkeypatch.chdir(tmp_path)
    commands = cli_commands()
    assert len(commands) > 40
    top = click.Context(cli)
    groups = [((name,), cli.get_command(top, name)) for name in cli.list_commands(top)]
    groups = [(path, group) for path, group in groups if isinstance(group, click.Group)]
    assert len(groups) >= 10
    for path, _ in [*commands, *groups]:
        name = " ".join(path)
        help_text = run_cli(*path, "--help", check=True).stdout
        tail = help_text.rstrip().split("\n\n")[-1].splitlines()
        assert tail[0].strip() in ("Example:", "Examples:"), f"{name}: {tail}"
        for line in tail[1:]:
            words = shlex.split(line.strip())
            assert words[: len(path) + 1] == ["printpipe", *path], f"{name}: {line}"
            for word in words[len(path) + 1 :]:  # the files it names (a click.Path(exists))
                if "." in word and not word.startswith("-") and "://" not in word:
                    (tmp_path / word).parent.mkdir(parents=True, exist_ok=True)
                    (tmp_path / word).touch()
            _parse_command_line(cli, words[1:])


def _parse_command_line(cli: click.Group, words: list[str]) -> None:
    """``printpipe WORDS`` parsed as click parses it before running it (a usage error raises),
    each group's context the parent of its command's."""
    with click.Context(cli) as context:
        command: click.Command = cli
        name = "printpipe"
        while isinstance(command, click.Group) and words:
            sub = command.get_command(context, words[0])
            if sub is None:  # a group's own options (printpipe play --db ...)
                break
            if command is not cli:
                context = click.Context(command, info_name=name, parent=context)
            command, name, words = sub, words[0], words[1:]
        command.make_context(name, words, parent=context)


def test_a_server_that_cannot_start_detached_says_why_once(tmp_path, keys_dir, monkeypatch):
    """``--detach`` starts the same command line again in the background (``sys.argv``): run
    here in process, as its own command line, only the server it starts is a process."""
    from tests.conftest import _run_in_process

    args = [
        "serve", "--db", str(tmp_path / "none.sqlite"), "--keys", str(keys_dir), "--port", "0",
        "--url-file", str(tmp_path / "url"), "--pid-file", str(tmp_path / "pid"), "--log",
        str(tmp_path / "log"), "--detach",
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["printpipe", *args])
    result = _run_in_process(args, None, None)
    assert_one_line_error(result, "none.sqlite not found")
    assert result.stderr.count("printpipe: error:") == 1, result.stderr
    assert result.returncode == 1


def test_a_missing_block_file_is_named_as_missing(tmp_path, game, keys_dir):
    """Each file of a block store removed in turn: the audit names it missing (not changed),
    and export refuses the store in one line naming it missing (not tampered, not unreadable
    with an errno)."""
    import shutil

    from tests.conftest import generate_store

    store = generate_store(game, keys_dir, tmp_path / "blk", PackRange(1, 1))
    names = [*sorted(p.name for p in store.glob("*.npy")), "summary.sig"]
    assert len(names) == 6
    for name in names:
        copy = tmp_path / f"without-{name}"
        shutil.copytree(store, copy)
        (copy / name).unlink()
        audited = run_cli("audit", str(copy), "--keys", str(keys_dir), "-q")
        assert audited.returncode == 1, audited.stderr
        assert f"{name} missing" in audited.stdout or f"{name} is missing" in audited.stdout
        assert "changed" not in audited.stdout and "Errno" not in audited.stdout
        exported = run_cli("export", str(copy), "--keys", str(keys_dir), "--out",
                           str(tmp_path / f"print-{name}"), "--unapproved", "-q")  # fmt: skip
        assert_one_line_error(exported, f"block store {copy} is incomplete: {name} is missing")


def test_the_template_export_uses_by_default_is_named_where_it_is():
    """``export --help`` names the games' own ticket templates by paths that exist (in a
    checkout as in a wheel), the game's default among them; no help names a ``GAME`` path."""
    from printpipe.games import game_template_dir

    text = run_cli("export", "--help", check=True).stdout
    listed = text.split("ticket templates (--template's default):\n", 1)[1].split("\n\n")[0]
    paths = [Path(line.strip()) for line in listed.splitlines()]
    assert game_template_dir("chien-chat") / "ticket.toml" in paths
    assert all(path.is_file() for path in paths), paths
    for path, _ in cli_commands():
        assert "templates/GAME" not in run_cli(*path, "--help", check=True).stdout, path
