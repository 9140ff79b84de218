"""The operator's wallet over HTTP: the API an operator implements, and a reference wallet.

The player's money lives at the operator (regulation article 5.1: the stake "est débitée sur
les disponibilités de son compte"): the game server asks the operator's wallet to debit the
stake, to credit the lot, and to cancel a debit whose play was never dealt, each call signed
with the game server's own key and idempotent by its reference (``docs/wallet-api.md``).

- ``api.py``: the API's contract, both sides' one source: the calls, their bodies (parsed
  strictly, written canonically), their answers and refusals;
- ``openapi.py``: the same as an OpenAPI 3.1 document, what an operator implements;
- ``store.py``, ``app.py``, ``server.py``: ``printpipe wallet serve``, the operator's side in
  miniature (its own database, the game server's signatures verified, a statement per day,
  injected faults for the tests): not part of the game server.

The game server's client of this API is ``printpipe.play.operator_wallet``.
"""
