"""Who each route of the two servers admits: an allow-list, declared once beside the route.

A route is public (anyone, unsigned: health, the OpenAPI document, the game's public pages), or
it names the roles of the registered terminals whose signed requests it admits (``retailer``,
``office``, ``platform``: :data:`printpipe.ledger.rules.TERMINAL_ROLES`) and whether the demo
player's session cookie is admitted too.  Nothing else is: a signed request from a terminal
whose role the route does not name is answered 403, one line naming the role, and audited
where the server audits refusals.  What an admitted terminal may then touch (a retailer's
packs, not another's) is the ledger's business (:class:`printpipe.ledger.rules.PackScope`).

The OpenAPI documents show each operation's list under :data:`ROLES_MEMBER`, written from the
route tables by :class:`printpipe.service.apidoc.ApiDocument`, which refuses a document and a
table that disagree when the application is created: a route cannot be served undocumented, nor
documented without its roles.
"""

from __future__ import annotations

from dataclasses import dataclass

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
