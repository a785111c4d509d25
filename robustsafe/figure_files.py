"""Writing a figure's files: ``<prefix>.png``, ``<prefix>.pdf`` and the plotted data as CSV."""

from __future__ import annotations

import sys
from pathlib import Path

from robustsafe.runstate import write_text_atomic


def save_figure(fig, prefix: Path, csv_text: str) -> list[Path]:
    """Write ``fig`` as ``<prefix>.png`` and ``<prefix>.pdf`` (the same bytes every time) and
    ``csv_text`` (the plotted data) as ``<prefix>.csv``; close the figure; return the paths.

    A figure made with pyplot is closed through pyplot; pyplot is not imported otherwise, so a
    caller that draws on a bare ``Figure`` keeps the process's backend untouched.
    """
    prefix.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    paths = [prefix.with_name(prefix.name + ext) for ext in (".png", ".pdf", ".csv")]
    fig.savefig(paths[0], dpi=120)
    fig.savefig(paths[1], metadata={"CreationDate": None})
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)
    write_text_atomic(paths[2], csv_text)
    return paths
