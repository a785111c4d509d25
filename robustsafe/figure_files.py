"""Writing a figure's files: ``<prefix>.png``, ``<prefix>.pdf`` and the plotted data as CSV."""

from __future__ import annotations

import sys
from pathlib import Path

from robustsafe.files import staged_files, write_text_atomic


def save_figure(fig, prefix: Path, csv_text: str) -> list[Path]:
    """Write ``fig`` as ``<prefix>.png`` and ``<prefix>.pdf`` (the same bytes every time) and
    ``csv_text`` (the plotted data) as ``<prefix>.csv``; close the figure; return the paths.

    The three are drawn in a hidden folder and moved in place together, the CSV (which marks
    the files as robustsafe's) first: a failed or killed drawing leaves the earlier files as
    they were, never a new PNG without its CSV.

    A figure made with pyplot is closed through pyplot; pyplot is not imported otherwise, so a
    caller that draws on a bare ``Figure`` keeps the process's backend untouched.
    """
    fig.tight_layout()
    try:
        with staged_files(prefix) as staged:
            write_text_atomic(staged.with_name(staged.name + ".csv"), csv_text)
            fig.savefig(staged.with_name(staged.name + ".png"), dpi=120)
            fig.savefig(staged.with_name(staged.name + ".pdf"), metadata={"CreationDate": None})
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            pyplot.close(fig)
    return [prefix.with_name(prefix.name + ext) for ext in (".png", ".pdf", ".csv")]
