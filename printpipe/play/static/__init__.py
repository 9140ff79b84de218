"""The player's page (``index.html``, ``play.css``, ``play.js``): package data, served by
``printpipe.play.app`` and read with :mod:`importlib.resources`, so a wheel carries it whole."""
