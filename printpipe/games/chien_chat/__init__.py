"""The dog/cat scratch ticket ("Chien Chat"): its rules and what its ticket shows.

- :mod:`.rules`: regulation articles 4.2-4.3 and the decisions they leave open
  (``evaluate``, ``layout``), the only place the rules live;
- :mod:`.ticket`: the printed ticket's side of :class:`~printpipe.games.base.PaperGame`: each
  effigy's front (artwork, texts, paytable rows), specimen words, symbol roles;
- :mod:`.artwork`, :mod:`.symbols`: the built-in vector drawings (dog, cat, kennel, basket,
  paw print; the 19 play symbols).
"""

from printpipe.games.chien_chat.rules import VIOLATIONS, ChienChat, Effigy, WayToWin

__all__ = ["VIOLATIONS", "ChienChat", "Effigy", "WayToWin"]
