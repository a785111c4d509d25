"""Reading and writing files safely, for every module: atomic writes (a crash leaves the old
file or the new one, never half of one), staged groups of files, readers that refuse what is not
a regular file (a FIFO would wait forever) and that never run code from the file (CSV, JSON,
and YAML through a safe loader that also refuses a key given twice), and a walk over a results tree.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import Any

import yaml

# ----------------------------------------------------------------------------- writing


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash never leaves a half-written file there.

    A file replaced keeps its permissions; a new one gets 0644. A full disk raises
    OSError(ENOSPC) naming ``path`` (not a serialiser's cryptic error).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:  # a new file
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as err:
        _unlink_quietly(tmp)
        if err.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, "no space left on device", str(path)) from None
        raise
    except BaseException:
        _unlink_quietly(tmp)
        raise


@contextmanager
def staged_files(out_prefix: str | Path) -> Iterator[Path]:
    """A prefix in a new hidden folder beside ``out_prefix``: the files written under it move
    beside ``out_prefix`` together when the block ends, and none does if it raises (a late
    error, such as a bad figure input, leaves every earlier file as it was). They move in name
    order, so a figure's ``.csv`` (its owner's mark) lands before its ``.png`` and ``.pdf``."""
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=prefix.parent, prefix=".staged-"))
    try:
        yield stage / prefix.name
        for staged in sorted(stage.iterdir()):
            os.replace(staged, prefix.parent / staged.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    """``path`` holds ``text`` (UTF-8) or what it held before, whatever stops this process.

    A file name that is not UTF-8 (read by Python with its bytes escaped) is written with those
    bytes as ``\\xNN``: the text stays UTF-8 and names the folder readably.
    """
    try:
        readable = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        data = readable.encode()
    except UnicodeEncodeError:  # a surrogate no file name makes (from a JSON file's escapes)
        data = text.encode("utf-8", "backslashreplace")
    write_bytes_atomic(path, data)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """``payload`` as indented JSON in ``path``, written atomically (``write_bytes_atomic``)."""
    write_bytes_atomic(path, json.dumps(payload, indent=2).encode())


# ----------------------------------------------------------------------------- reading


def read_text_file(path: str | PathLike, newline: str | None = None) -> str:
    """The text of ``path``; OSError if it is there but not a regular file (a FIFO would wait
    for a writer). ``newline=""`` keeps line ends as they are, as csv reading needs."""
    if os.path.exists(path) and not os.path.isfile(path):
        raise OSError("not a regular file")  # (the caller names the file)
    with open(path, newline=newline) as f:
        return f.read()


def read_csv_rows(path: str | PathLike) -> list[dict[str, str]]:
    """The rows of the CSV file ``path`` (``metrics.csv``), keyed by its header; OSError as
    ``read_text_file``, csv.Error or UnicodeDecodeError for a file that is not CSV text."""
    return list(csv.DictReader(io.StringIO(read_text_file(path, newline=""), newline="")))


def read_json(path: str | PathLike) -> Any:
    """The JSON value in ``path`` (data only: no code runs); ValueError naming the file if it
    cannot be read, is not JSON, nests deeper than Python's recursion allows, or holds an
    integer with more digits than a float holds (they would fail later, far from the file)."""
    try:
        return json.loads(read_text_file(path), parse_int=_float_sized_int)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read it ({err})") from None
    except RecursionError:
        raise ValueError(f"{path}: cannot read it (nested too deeply)") from None


def _float_sized_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:  # beyond float's largest, about 1.8e308
        raise ValueError(f"an integer of {len(text)} digits") from None
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing a key given twice in one mapping (plain YAML keeps the
    last silently: a settings file's first ``ppo:`` block would be lost)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | PathLike) -> Any:
    """A YAML file's data (``parse_yaml``); ValueError naming the file, FileNotFoundError if
    there is none."""
    try:
        text = read_text_file(path)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: {err}") from None
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ValueError(f"{path}: cannot read it ({err.strerror or err})") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: str | PathLike) -> Any:
    """The data of YAML ``text`` read from ``path`` (safe loading: never executes code; a key
    given twice in a mapping refused); ValueError naming the file."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        why = getattr(err, "problem", None)
        detail = f": {why}" if why and "given twice" in why else ""
        raise ValueError(f"{path}: not valid YAML{line}{detail}") from None
    except RecursionError:
        raise ValueError(f"{path}: cannot read it (nested too deeply)") from None


def find_named(root: Path, *names: str) -> list[Path]:
    """Every file called one of ``names`` under ``root``, sorted (``walk_files``)."""
    return sorted(p for p in walk_files(root) if p.name in names)


def walk_files(root: Path) -> Iterator[Path]:
    """Every file under ``root``, following linked folders (a run linked into a results folder
    counts); each real folder is read once, so a link back up the tree ends."""
    seen = set()
    for folder, subfolders, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link back up the tree, or a second link to one folder
            subfolders.clear()
            continue
        seen.add(real)
        yield from (Path(folder) / n for n in files)
