"""The TrueType fonts the press files embed (DejaVu, with their licence), data only.

Kept at the top of the checkout and installed as the package ``printpipe.fonts``
(``[tool.setuptools] package-dir`` in pyproject.toml), so that ``importlib.resources`` finds
them in a checkout and in an installed wheel alike.
"""
