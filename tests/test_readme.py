"""The README's walkthroughs, run exactly as written: each command, and the answer it shows.

In a walkthrough block, ``COMMAND  # ANSWER`` means the command's output (stdout and stderr)
contains ANSWER, where ``...`` stands for anything and a trailing ``(exit N)`` is the exit
status (0 otherwise); an answer that starts with ``e.g.`` is an example, not checked. The
commands run one after the other in one shell, in an empty folder, with this interpreter's
``printpipe`` first on the PATH.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def walkthrough_commands() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Walkthroughs", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            command, _, answer = line.partition(" # ")
            commands.append((command.strip(), answer.strip()))
    return commands


def expectation(answer: str) -> tuple[re.Pattern[str] | None, int]:
    status = 0
    if match := re.search(r"\(exit (\d+)\)\s*$", answer):
        status, answer = int(match[1]), answer[: match.start()].strip()
    if not answer or answer.startswith("e.g."):
        return None, status
    pieces = [re.escape(p.strip()) for p in answer.split("...")]
    return re.compile(r".*?".join(pieces), flags=re.S), status


def _stop_what_was_left_running(folder: Path) -> None:
    """A walkthrough that failed between ``serve --detach`` and its ``kill`` leaves the server
    running: stop it (only a process whose working folder is this test's)."""
    for pid_file in folder.glob("*.pid"):
        with contextlib.suppress(ValueError, OSError):
            pid = int(pid_file.read_text())
            if Path(f"/proc/{pid}/cwd").resolve() == folder.resolve():
                os.kill(pid, signal.SIGTERM)


def test_the_walkthroughs_give_the_answers_the_readme_shows(tmp_path):
    commands = walkthrough_commands()
    assert len(commands) >= 15, "the walkthroughs were not found in the README"
    script = []
    for i, (command, _) in enumerate(commands):
        script.append(f"{{ {command} ; }} >out-{i} 2>&1; echo $? >rc-{i}")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    try:
        subprocess.run(
            ["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, check=True, timeout=600
        )
    finally:
        _stop_what_was_left_running(tmp_path)
    for i, (command, answer) in enumerate(commands):
        output = (tmp_path / f"out-{i}").read_text()
        status = int((tmp_path / f"rc-{i}").read_text())
        pattern, expected_status = expectation(answer)
        assert status == expected_status, f"{command}: exit {status}\n{output}"
        if pattern is not None:
            assert pattern.search(output), f"{command}: expected {answer!r}, got\n{output}"


@pytest.mark.parametrize(
    ("answer", "output", "matches"),
    [
        ("WIN 10", "WIN 10\n", True),
        ("WIN 10", "NO WIN\n", False),
        ("... AUDIT PASSED", "a\nb\nAUDIT PASSED\n", True),
        ("ALREADY PAID ...Z T1 (exit 1)", "ALREADY PAID 2030-01-01T00:00:00Z T1", True),
    ],
)
def test_the_answer_convention(answer, output, matches):
    pattern, _ = expectation(answer)
    assert pattern is not None
    assert bool(pattern.search(output)) is matches


def test_every_cited_doc_is_in_the_repository():
    root = README.parent
    sources = [README, *root.glob("docs/*.md"), *root.glob("printpipe/**/*.py")]
    sources += [*root.glob("printpipe/**/*.toml")]
    cited = set()
    for source in sources:
        text = source.read_text(encoding="utf-8")
        cited |= {(source, m) for m in re.findall(r"docs/[\w./-]+\.(?:md|txt)", text)}
        if source.parent.name == "docs":
            cited |= {
                (source, f"docs/{m}") for m in re.findall(r"\]\(([\w./-]+\.(?:md|txt))\)", text)
            }
    assert len(cited) > 10
    missing = sorted(
        f"{s.relative_to(root)} cites {c}" for s, c in cited if not (root / c).is_file()
    )
    assert not missing, missing
