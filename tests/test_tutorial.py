"""The tutorial's walkthroughs (docs/tutorial.md), run exactly as written: each command, and the
answer it shows; and every document the README, docs/ and the code cite is in the repository.

In every ``sh`` block of the tutorial, ``COMMAND  # ANSWER`` means the command's output
(stdout and stderr) contains ANSWER, where ``...`` stands for anything and a trailing
``(exit N)`` is the exit status (0 otherwise); an answer that starts with ``e.g.`` is an
example, not checked. The commands run one after the other in one shell, in an empty folder,
with this interpreter's ``printpipe`` first on the PATH: a client of
``tests/cli_forkserver.py``, whose commands are processes forked from one that has imported
printpipe (``PRINTPIPE_TEST_SUBPROCESS=1``: the installed entry point).
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

from tests import cli_forkserver
from tests.conftest import cli_commands

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TUTORIAL = ROOT / "docs" / "tutorial.md"


def walkthrough_commands() -> list[tuple[str, str]]:
    text = TUTORIAL.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
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


def test_the_walkthroughs_give_the_answers_the_tutorial_shows(tmp_path):
    commands = walkthrough_commands()
    assert len(commands) >= 15, "the walkthroughs were not found in docs/tutorial.md"
    script = []
    for i, (command, _) in enumerate(commands):
        script.append(f"{{ {command} ; }} >out-{i} 2>&1; echo $? >rc-{i}")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    work = tmp_path / "work"
    work.mkdir()
    server = None
    if not os.environ.get("PRINTPIPE_TEST_SUBPROCESS"):  # else the installed entry point
        server = cli_forkserver.install(tmp_path)
        path = f"{tmp_path}{os.pathsep}{path}"
    try:
        subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=work,
            env={**os.environ, "PATH": path},
            check=True,
            timeout=600,
        )
    finally:
        _stop_what_was_left_running(work)
        if server is not None:
            cli_forkserver.stop(server)
    for i, (command, answer) in enumerate(commands):
        output = (work / f"out-{i}").read_text()
        status = int((work / f"rc-{i}").read_text())
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
    """Every ``docs/...`` path the code and documents name, and every relative link of a
    Markdown page (the README's pictures, SECURITY.md, a doc's neighbours), is a file here."""
    markdown = [*ROOT.glob("*.md"), *ROOT.glob("docs/*.md")]
    sources = [*markdown, *ROOT.glob("printpipe/**/*.py"), *ROOT.glob("templates/**/*.toml")]
    cited: set[tuple[Path, Path]] = set()
    for source in sources:
        text = source.read_text(encoding="utf-8")
        cited |= {(source, ROOT / m) for m in re.findall(r"docs/[\w./-]+\.(?:md|txt)", text)}
        if source in markdown:
            links = re.findall(r"\]\(([^)\s#:]+)(?:#[^)]*)?\)", text)
            cited |= {(source, source.parent / link) for link in links}
    assert len(cited) > 10
    missing = sorted(
        f"{source.relative_to(ROOT)} cites {path}" for source, path in cited if not path.exists()
    )
    assert not missing, missing


def test_the_tutorial_names_every_command_that_takes_no_keys_folder():
    """ "The commands that use the parties' keys take --keys DIR; these use none and take no
    --keys: ...": the list is the commands without the option, no more and no fewer."""
    text = " ".join(TUTORIAL.read_text(encoding="utf-8").split())
    match = re.search(r"these use none and take no `--keys`: (.*?)\. ", text)
    assert match is not None, "the sentence is gone from docs/tutorial.md"
    named = {name for name in re.findall(r"`([a-z][a-z -]*)`", match[1])}
    without = set()
    for path, command in cli_commands():
        options = {o for parameter in command.params for o in getattr(parameter, "opts", [])}
        if "--keys" not in options:
            without.add(" ".join(path))
    covered = {p for p in without if p in named or p.split()[0] in named}
    assert covered == without, f"take no --keys, not named: {sorted(without - covered)}"
    stray = {n for n in named if not any(p == n or p.split()[0] == n for p in without)}
    assert not stray, f"named, but take --keys: {sorted(stray)}"


def test_the_game_server_keeps_running_after_its_block_so_the_login_link_opens():
    """A reader runs a block, then reads what to do next: the block that starts ``printpipe
    play`` in the background ends with the login link, not with the ``kill`` that would stop
    the server before the link is opened; a later block stops it."""
    blocks = re.findall(r"```sh\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), flags=re.S)
    starts = [i for i, block in enumerate(blocks) if re.search(r"printpipe play .*--detach", block)]
    assert starts, "the online game's walkthrough is gone"
    for i in starts:
        assert "kill" not in blocks[i], blocks[i]
        assert any("kill $(cat play.pid)" in later for later in blocks[i + 1 :])


def _debian_packages(text: str) -> tuple[set[str], set[str]]:
    """The commands a shell text checks with ``command -v`` and the packages it installs with
    ``apt-get install``."""
    checked = set(re.findall(r"command -v ([\w-]+)", text))
    installed = {
        package
        for line in re.findall(r"apt-get install -y -qq ([\w -]+)", text)
        for package in line.split()
    }
    return checked, installed


def test_the_readme_test_command_installs_what_ci_installs():
    """The README's test command and ``.ci/run`` check the same commands and install the same
    Debian packages (Chromium for the player's page among them): a fresh machine set up by the
    README runs every test CI runs."""
    readme = README.read_text(encoding="utf-8")
    section = readme.split("## Run the tests", 1)[1].split("## ", 1)[0]
    (command,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _debian_packages(command) == _debian_packages(ci)
    assert "chromium" in _debian_packages(command)[1]


NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def test_the_walkthroughs_are_counted_alike_everywhere():
    """The tutorial's sections with commands are its walkthroughs: the tutorial, the README and
    docs/README.md say how many, and the lists of them name as many."""
    text = TUTORIAL.read_text(encoding="utf-8")
    walkthroughs = [s for s in re.split(r"^## ", text, flags=re.M)[1:] if "```sh" in s]
    number = NUMBERS[len(walkthroughs)]
    lists = []
    for source, page in ((TUTORIAL, text), (README, README.read_text(encoding="utf-8")),
                         (ROOT / "docs" / "README.md", None)):  # fmt: skip
        page = " ".join((page or source.read_text(encoding="utf-8")).split())
        said = re.findall(r"\b(\w+) walkthroughs, one for each party's job( \(([^)]*)\))?", page)
        assert said, f"{source.name} does not say how many walkthroughs"
        for word, _, listed in said:
            assert word.lower() == number, f"{source.name}: {word}, the tutorial has {number}"
            lists += [listed.split(", ")] if listed else []
    assert lists and all(len(names) == len(walkthroughs) for names in lists), lists
