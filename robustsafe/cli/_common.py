"""What the commands share: the one-line user error, the help formatter, output checks."""

from __future__ import annotations

import errno
import tempfile
from collections.abc import Callable
from pathlib import Path


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def parse_epsilons_quietly(text: str) -> list[float]:
    """The epsilons of ``--eps``, or [] if it does not parse (reported later, in order)."""
    from robustsafe.evaluate import parse_epsilons

    try:
        return parse_epsilons(text)
    except ValueError:
        return []


def _sweep_files(out: Path) -> list[Path]:
    prefix = out.with_name(out.stem + "_sweep")
    return [prefix.with_suffix(ext) for ext in (".csv", ".png", ".pdf")]


def _check_output(path: Path, force: bool) -> None:
    """Refuse, before any work, an output file that cannot be written or would replace one."""
    if path.is_dir():
        raise CLIError(f"--out {path} is a directory; give a file name, e.g. {path / 'eval.json'}")
    if path.exists() and not force:
        raise CLIError(f"{path} already exists; pass --force to replace it, or another --out")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:
        raise CLIError(f"cannot write {path}: {_os_reason(err)}") from None


def _os_reason(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    return err.strerror or str(err)


def _write_or_keep(path: Path, write: Callable[[Path], None]) -> None:
    """``write(path)``; if that fails, write to a fresh temporary folder and say where."""
    try:
        write(path)
    except OSError as err:
        reason = _os_reason(err)
        try:
            fallback = Path(tempfile.mkdtemp(prefix="robustsafe-")) / path.name
            write(fallback)
        except OSError:
            raise CLIError(f"cannot write {path}: {reason} (and no fallback copy)") from None
        raise CLIError(
            f"cannot write {path}: {reason}; the results were saved in {fallback} instead"
        ) from None
