"""The press: a block store's export runs, the checks a press's intake makes, the main job.

- ``export.py``: an export run, chunks of whole packs rendered on the generation's cluster into
  press PDFs (composite, or a conventional line's static plates and PDF/VT imaging), with
  ``job.json`` and the run's manifest (:func:`export_block`); an online game's run is handed
  to ``feed_export.py`` (the unit feed instead of PDFs);
- ``intake.py``: ``printpipe preflight``, each file against the standard it claims and the
  job's rules (:func:`preflight`), with the press line's rules in ``preflight_press.py``;
- ``main_job.py``: ``printpipe run``'s own workflow (on demo keys, the proof made and
  approved first: :func:`approve_demo_proof`).

An export needs the lottery's approval of a proof of its inputs (``printpipe.handover``).
The press is the top of the printer's side: nothing but the command line imports it.  Names
are imported on first use, so that ``printpipe export --help`` loads no renderer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe import load_on_first_use

if TYPE_CHECKING:
    from printpipe.press.export import export_block, export_summary
    from printpipe.press.intake import preflight, preflight_summary
    from printpipe.press.main_job import RUN_EXPORT_PACKS, approve_demo_proof, block_dir_name

_HOMES = {
    "export_block": "export",
    "export_summary": "export",
    "preflight": "intake",
    "preflight_summary": "intake",
    "RUN_EXPORT_PACKS": "main_job",
    "approve_demo_proof": "main_job",
    "block_dir_name": "main_job",
}

__all__ = [
    "RUN_EXPORT_PACKS",
    "approve_demo_proof",
    "block_dir_name",
    "export_block",
    "export_summary",
    "preflight",
    "preflight_summary",
]

__getattr__ = load_on_first_use(__name__, _HOMES)
