"""Who each route of the two servers admits: an allow-list, declared once beside the route.

A route is public (anyone, unsigned: health, the OpenAPI document, the game's public pages), or
it names the roles of the registered terminals whose signed requests it admits (``retailer``,
``office``, ``platform``: :data:`printpipe.ledger.rules.TERMINAL_ROLES`) and whether the demo
player's session cookie is admitted too.  Nothing else is: a signed request from a terminal
whose role the route does not name is answered 403, one line naming the role, and audited
where the server audits refusals.  What an admitted terminal may then touch (a retailer's
packs, not another's) is the ledger's business (:class:`printpipe.ledger.rules.PackScope`).

The OpenAPI documents show each operation's list under :data:`ROLES_MEMBER`, written from the
route tables by :func:`with_roles`, which refuses a document and a table that disagree: a route
cannot be served undocumented, nor documented without its roles.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from printpipe.ledger import TERMINAL_ROLES

ANYONE = "anyone"
"""What the OpenAPI documents list for a public route."""
SESSION = "session"
"""What they list for the demo player's session cookie (``printpipe play --demo``)."""
ROLES_MEMBER = "x-printpipe-roles"
"""The OpenAPI extension member of an operation that lists who it admits."""


@dataclass(frozen=True)
class Access:
    """Who a route admits: the terminal ``roles`` whose signed requests it takes, and the
    demo player's ``session`` cookie; neither: public."""

    roles: tuple[str, ...] = ()
    session: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.roles) - set(TERMINAL_ROLES)
        if unknown:
            raise ValueError(f"unknown roles {sorted(unknown)}: {', '.join(TERMINAL_ROLES)}")

    @property
    def public(self) -> bool:
        return not self.roles and not self.session

    def admits(self, role: str) -> bool:
        """Whether a signed request of a terminal of ``role`` is taken."""
        return role in self.roles

    def listed(self) -> list[str]:
        """Who is admitted, as the OpenAPI documents list it."""
        if self.public:
            return [ANYONE]
        return [*self.roles, *([SESSION] if self.session else [])]

    def refusal(self, role: str) -> str:
        """The one line a refused terminal is answered (403)."""
        return (
            f"a terminal of role {role} is not admitted here (this route admits: "
            f"{', '.join(self.listed())})"
        )


PUBLIC = Access()


def signed_by(*roles: str, session: bool = False) -> Access:
    """A route for the signed requests of terminals of ``roles`` (and the session cookie)."""
    return Access(tuple(roles), session=session)


def with_roles(
    document: dict[str, Any], routes: Iterable[tuple[str, str, Access]]
) -> dict[str, Any]:
    """A copy of the OpenAPI ``document`` in which every operation lists who its route admits
    (``routes``: path, method, access); ValueError when an operation has no route or a route
    no operation."""
    result = copy.deepcopy(document)
    paths: dict[str, dict[str, Any]] = result["paths"]
    described = {(path, method) for path, item in paths.items() for method in item}
    served: set[tuple[str, str]] = set()
    for path, method, access in routes:
        operation = paths.get(path, {}).get(method.lower())
        if operation is None:
            raise ValueError(f"{method} {path} is served but not in the OpenAPI document")
        operation[ROLES_MEMBER] = access.listed()
        served.add((path, method.lower()))
    if described - served:
        missing = ", ".join(f"{m.upper()} {p}" for p, m in sorted(described - served))
        raise ValueError(f"described in the OpenAPI document but not served: {missing}")
    return result
