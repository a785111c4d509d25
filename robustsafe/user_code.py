"""Importing a user's own Python code, named on the command line (``--policy module:attr``,
``--attacker-module``): a module name or a ``.py`` file, with one-line errors.

Importing runs the code: the options that call this say so in their help.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from robustsafe.runstate import first_line


def error_line(err: BaseException) -> str:
    """``TypeName: first line of the message``: a user's code's error, in one line."""
    return f"{type(err).__name__}: {first_line(err)}" if str(err).strip() else type(err).__name__


def import_user_module(target: str, where: str) -> ModuleType:
    """The module ``target`` (``pkg.mod``, or ``path/to/file.py``, imported under a private
    name), imported; ValueError beginning with ``where`` (the option, as the user wrote it)
    if it is not there, is not Python, or raises while importing."""
    try:
        if target.endswith(".py"):
            file = Path(target)
            if not file.is_file():
                raise FileNotFoundError(f"no file {file}")
            loaded = _loaded_from(file)
            if loaded is not None:  # named twice (--policy and --attacker-module): run it once
                return loaded
            name = f"_robustsafe_user_{file.stem}"
            module_spec = importlib.util.spec_from_file_location(name, file)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
            return module
        return importlib.import_module(target)
    except (ImportError, FileNotFoundError) as err:
        raise ValueError(f"{where}: {err}") from None
    except SyntaxError as err:  # not Python: say where, without the interpreter's traceback
        raise ValueError(f"{where}: {err.msg} ({err.filename}, line {err.lineno})") from None
    except Exception as err:  # the user's module failed while importing: its error, one line
        raise ValueError(f"{where}: importing it raised {error_line(err)}") from None


def _loaded_from(file: Path) -> ModuleType | None:
    """The module already imported from ``file`` (by path or by its dotted name), if any."""
    real = file.resolve()
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and Path(origin).resolve() == real:
            return module
    return None
