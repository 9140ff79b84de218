"""One example per command (and a group's commands' first steps), shown at the end of its
``--help``: how the walkthroughs of docs/tutorial.md run it, in the folder they work in
(``keys/``, ``blk/``, ``print/``, ``ledger.sqlite``...).  Kept here, beside
:data:`printpipe.cli.COMMANDS`, so that each command's module holds only its options;
:func:`with_examples` adds them as a command is loaded, and a test checks that every command
has one and that each parses."""

from __future__ import annotations

import click

CODE = "0412000001001045981740166"
"""A validation code of the right form (the tutorial's wrong one): examples stand alone, with
no ``$CODE`` to set first."""

EXAMPLES: dict[str, tuple[str, ...]] = {
    "audit": ("printpipe audit blk --keys keys",),
    "claim": (f"printpipe claim {CODE} --db ledger.sqlite --keys keys --terminal T1",),
    "codes": ("printpipe codes audit.csv --pack 000001 --prize 10 --long",),
    "commitment recount": (
        "printpipe commitment recount reveal.txt --commitment blk/commitment.json --keys keys",
    ),
    "commitment reveal": (
        "printpipe commitment reveal blk/commitment.json --manifest blk/manifest.ppm "
        "--closed-on 2026-01-31 --out reveal.txt --keys keys",
    ),
    "commitment sign": (
        "printpipe commitment sign blk/commitment.json --manifest blk/manifest.ppm --keys keys",
    ),
    "commitment verify": ("printpipe commitment verify blk/commitment.json --keys keys",),
    "export": (
        "printpipe export blk --keys keys --out print",
        "printpipe export blk --keys keys --out print-line --press conventional",
    ),
    "feed show": (
        "printpipe feed show ga-run/golden-animals-b0001-p000001-000002.feed "
        "--unit 1805-000001-001-0",
    ),
    "feed verify": ("printpipe feed verify ga-run/golden-animals-b0001-p000001-000002.feed",),
    "generate": (
        "printpipe generate --keys keys --packs 1:8 --out blk",
        "printpipe generate --game golden-animals --packs 1:2 --keys keys --out ga-block",
    ),
    "keys init": ("printpipe keys init keys",),
    "ledger checkpoint": (
        "printpipe ledger checkpoint --db ledger.sqlite --keys keys --out checkpoint.json",
    ),
    "ledger close": ("printpipe ledger close --db ledger.sqlite --closed-on 2026-01-31",),
    "ledger config": ("printpipe ledger config --db ledger.sqlite --retailer-limit 150",),
    "ledger import": (
        "printpipe ledger import print/manifest.ppm --keys keys --db ledger.sqlite",
        "printpipe ledger import blk/manifest.ppm --commitment blk/commitment.json --keys keys "
        "--db ledger.sqlite",
    ),
    "ledger locks": ("printpipe ledger locks --db ledger.sqlite",),
    "ledger remaining": (
        "printpipe ledger remaining --db play.sqlite",
        "printpipe ledger remaining --db ledger.sqlite --keys keys --out remaining.txt",
    ),
    "ledger unlock": (
        "printpipe ledger unlock 0412-000001-045-1 --db ledger.sqlite "
        "--reason 'ticket inspected at the office'",
    ),
    "ledger upgrade": ("printpipe ledger upgrade --db ledger.sqlite",),
    "ledger verify-log": (
        "printpipe ledger verify-log --db ledger.sqlite --keys keys",
        "printpipe ledger verify-log --db ledger.sqlite --keys keys --checkpoint checkpoint.json",
    ),
    "manifest export": (
        "printpipe manifest export print/manifest.ppm --keys keys --csv audit.csv",
    ),
    "manifest verify": ("printpipe manifest verify print/manifest.ppm --keys keys",),
    "packs activate": ("printpipe packs activate --db ledger.sqlite 000001",),
    "packs settle": ("printpipe packs settle --db ledger.sqlite 000001",),
    "packs ship": ("printpipe packs ship --db ledger.sqlite --retailer shop-42 000003",),
    "play": (
        "printpipe play --db play.sqlite --keys keys --demo",
        "printpipe play --db play.sqlite --keys keys --demo --port 0 --url-file play.url "
        "--pid-file play.pid --log play.log --detach",
        "printpipe play --db play.sqlite --keys keys --wallet http://127.0.0.1:8790 "
        "--wallet-key game.key",
    ),
    "play launch": ("printpipe play launch bob --key operator.key --url http://127.0.0.1:8788",),
    "play report": ("printpipe play report --db play.sqlite --keys keys --day 2026-12-01",),
    "play reconcile": (
        "printpipe play reconcile --db play.sqlite --wallet http://127.0.0.1:8790 "
        "--wallet-key game.key --day 2026-12-01",
    ),
    "players add": (
        "printpipe players add alice --balance 20 --db play.sqlite --keys keys "
        "--url http://127.0.0.1:8788",
    ),
    "preflight": ("printpipe preflight print",),
    "proof": (
        "printpipe proof --out proof",
        "printpipe proof --out press-proof --from-block blk --keys keys",
    ),
    "proof approve": ("printpipe proof approve proof --keys keys",),
    "prove": (f"printpipe prove {CODE} --db ledger.sqlite --keys keys --out proof.json",),
    "run": ("printpipe run",),
    "serve": (
        "printpipe serve --db central.sqlite --keys keys --workers 2",
        "printpipe serve --db central.sqlite --keys keys --port 0 --url-file serve.url "
        "--pid-file serve.pid --log serve.log --detach",
    ),
    "terminal activate": (
        "printpipe terminal activate 000003 --server http://127.0.0.1:8250 --key till.key",
    ),
    "terminal claim": (
        f"printpipe terminal claim {CODE} --server http://127.0.0.1:8250 --key till.key",
    ),
    "terminal keygen": ("printpipe terminal keygen till.key",),
    "terminal pack": (
        "printpipe terminal pack 000003 --server http://127.0.0.1:8250 --key till.key",
    ),
    "terminal validate": (
        f"printpipe terminal validate {CODE} --server http://127.0.0.1:8250 --key till.key",
    ),
    "terminals add": (
        "printpipe terminals add shop-42:till-1 --db central.sqlite --retailer shop-42 "
        "--public-key till.key.pub",
    ),
    "terminals list": ("printpipe terminals list --db central.sqlite",),
    "terminals revoke": (
        "printpipe terminals revoke shop-42:till-1 --db central.sqlite --reason 'till stolen'",
    ),
    "validate": (f"printpipe validate {CODE} --db ledger.sqlite --keys keys --terminal T1",),
    "verify-proof": (
        "printpipe verify-proof proof.json --commitment blk/commitment.json --keys keys",
    ),
    "verify-remaining": (
        "printpipe verify-remaining remaining.txt --commitment blk/commitment.json --keys keys",
    ),
    "wallet deposit": ("printpipe wallet deposit alice 20 --db wallet.sqlite",),
    "wallet serve": (
        "printpipe wallet serve --db wallet.sqlite --trust game.key.pub",
        "printpipe wallet serve --db wallet.sqlite --trust game.key.pub --port 0 "
        "--url-file wallet.url --pid-file wallet.pid --log wallet.log --detach",
    ),
    "wallet statement": ("printpipe wallet statement --db wallet.sqlite --day 2026-12-01",),
}

GROUPS: dict[str, tuple[str, ...]] = {
    "commitment": ("commitment verify", "commitment sign"),
    "feed": ("feed verify", "feed show"),
    "keys": ("keys init",),
    "ledger": ("ledger import", "ledger remaining", "ledger verify-log"),
    "manifest": ("manifest verify", "manifest export"),
    "packs": ("packs ship", "packs activate"),
    "players": ("players add",),
    "terminal": ("terminal keygen", "terminal validate"),
    "terminals": ("terminals add", "terminals list"),
    "wallet": ("wallet deposit", "wallet serve"),
}
"""A group's help ends with its commands' first steps: the first example of each named."""
EXAMPLES.update(
    {
        group: tuple(EXAMPLES[command][0] for command in commands)
        for group, commands in GROUPS.items()
    }
)

GUIDE = (
    "Start with the README and docs/tutorial.md (in printpipe's source): what each party runs, "
    "walkthrough by walkthrough, every command as it is run there. printpipe COMMAND --help: a "
    "command's options, and an example."
)
"""The end of ``printpipe --help``."""


def epilog(lines: tuple[str, ...]) -> str:
    """The end of a command's help: its example(s), kept as written (click's ``\\b``)."""
    title = "Example:" if len(lines) == 1 else "Examples:"
    return "\b\n" + title + "\n" + "\n".join(f"  {line}" for line in lines)


def with_examples(command: click.Command, path: str) -> click.Command:
    """``command`` (named ``path``, e.g. ``ledger import``) and, for a group, each of its
    commands, their help ending with their example (after the command's own epilog)."""
    if path in EXAMPLES and not getattr(command, "_example_added", False):
        own = f"{command.epilog}\n\n" if command.epilog else ""
        command.epilog = own + epilog(EXAMPLES[path])
        setattr(command, "_example_added", True)  # noqa: B010 - click's object, our mark
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            with_examples(sub, f"{path} {name}")
    return command
