"""The game templates: one folder per game (its definition ``game.toml``, ticket template and
texts), data only.

Kept at the top of the checkout, where a game's designer finds them, and installed as the
package ``printpipe.templates`` (``[tool.setuptools] package-dir`` in pyproject.toml), so that
``importlib.resources`` finds them in a checkout and in an installed wheel alike.
"""
