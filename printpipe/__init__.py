"""printpipe: the production pipeline for lottery instant tickets."""

__version__ = "0.1.0"
