"""Drawing tickets and press sheets with reportlab: symbols, barcodes, one ticket, a sheet.

``template`` reads the geometry (mm, from ``templates/<game>/ticket*.toml``), ``fonts`` embeds
the TrueType files of ``fonts/``, ``symbols`` and ``barcodes`` turn data into PDF drawing,
``ticket`` draws one ticket's front or back anywhere on a canvas (press or proof), and
``sheet`` imposes tickets on press sheets.
"""
