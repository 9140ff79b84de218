"""The inks of a press file: which separation carries which layer of a scratch ticket.

A scratch ticket is printed in layers by different units of the press (``docs/print-files.md``),
so each layer is its own separation in the PDF, and a prepress department sees each as a plate:

===================  ==========================================================  ==========
separation           what it carries                                             overprint
===================  ==========================================================  ==========
Cyan, Magenta,       the static artwork of both faces                            no
Yellow, Black
``Blocking``         the opaque layer under every play area (against candling)   yes
``Variable``         the variable imaging: symbols, captions, codes, serial,     yes
                     the slug line
``ScratchOff``       the scratch-off coating, spread beyond what it hides        yes
``ScratchDecor``     the decoration printed on the coating ("GRATTEZ ICI")       yes
``All``              registration: crop and register marks, the plates' label    no
===================  ==========================================================  ==========

Each spot's alternate colour is only what a viewer without the plates shows (a pale base, black
imaging, a silver coating, a dark decoration); the press prints the separation.  Every layer
above the artwork overprints, so no later layer erases an earlier one on its plate.
"""

from __future__ import annotations

from reportlab.lib.colors import CMYKColorSep

PROCESS = ("Cyan", "Magenta", "Yellow", "Black")
"""Ghostscript's names for the process plates."""
BLOCKING = CMYKColorSep(0, 0, 0, 0.04, spotName="Blocking", density=1)
VARIABLE = CMYKColorSep(0, 0, 0, 1, spotName="Variable", density=1)
SCRATCH_OFF = CMYKColorSep(0.08, 0.05, 0.04, 0.35, spotName="ScratchOff", density=1)
SCRATCH_DECOR = CMYKColorSep(0.15, 0.1, 0.08, 0.85, spotName="ScratchDecor", density=1)
REGISTRATION = CMYKColorSep(1, 1, 1, 1, spotName="All", density=1)
"""``/Separation /All``: inked on every plate, spots included."""
SPOTS = (BLOCKING, VARIABLE, SCRATCH_OFF, SCRATCH_DECOR)
"""The spot separations a press file's fronts use, bottom to top."""
SPOT_NAMES = tuple(str(ink.spotName) for ink in SPOTS)
