"""A run directory: its files, and the checks before a run starts or resumes in it.

    config.yaml            the resolved settings
    metrics.csv            one row per epoch
    tb/                    TensorBoard logs
    agent.pt               the latest agent (policy, V and Q critics, normaliser)
    checkpoints/           agent snapshots every ``checkpoint_every`` epochs
    state.pt               everything needed to resume: the learner (networks, optimisers,
                           multiplier), the Q critics and their replay buffer, random-generator
                           states, the collector's episodes, the epoch counter
    status.json            epochs done, cheap to read (``run_status``)
    provenance.json        the code of each start and resume (``robustsafe.provenance``)
    timings.json           written by ``robustsafe grid``: each training and evaluation it ran
                           here, when it started, how long it took, how it ended

Every file is written atomically (``runstate``). The training loop is ``robustsafe.train``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from robustsafe.config import TrainConfig
from robustsafe.files import read_csv_rows, read_text_file, read_yaml, write_text_atomic
from robustsafe.runstate import LOCK_NAME, check_unlocked, load_state
from robustsafe.settings_io import NAMING_SETTINGS, flat_settings, from_dict


def load_run_config(run_dir: Path) -> TrainConfig:
    """The settings of a run directory; ValueError naming the file if it cannot be read."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.yaml)")
    data = read_yaml(path)
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        raise ValueError(f"{path} is {what}, not a mapping of settings")
    try:
        return from_dict(TrainConfig, with_settings_of_its_time(data))
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None


# Settings added after runs had been saved without them, with the behaviour those runs had:
# a saved config of that learner that lacks one ran with this value, not with today's default
# (a resume must go on as it began). Other learners' files keep the defaults, which they ignore.
SETTINGS_BEFORE_THEY_EXISTED: dict[str, tuple[str, Any]] = {
    # SA-PPOL regularised with the KL (the paper's text) until the authors' code's squared
    # distance of the means became the default (the zoo's first PPOL agents)
    "robust.sa_regularizer": ("ppol", "kl"),
    "sac.multiplier": ("sac-lag", "gradient"),  # the per-step ascent was the only multiplier
    "sac.rescale": ("sac-lag", False),  # the actor loss was not divided by (1 + lambda)
    "sac.actor_average": ("sac-lag", 0.0),  # the agent file held the last actor
}


def with_settings_of_its_time(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a saved config) with every setting of ``SETTINGS_BEFORE_THEY_EXISTED`` that
    its learner's file lacks set to its old value (a file without ``algo`` is PPO-Lagrangian's,
    from before there were other learners); a group the file lacks is left alone."""
    out = dict(data)
    for key, (algo, value) in SETTINGS_BEFORE_THEY_EXISTED.items():
        group, name = key.split(".")
        if out.get("algo", "ppol") == algo and isinstance(out.get(group), dict):
            out[group] = {name: value, **out[group]}
    return out


def load_settings_file(path: str | Path) -> tuple[dict[str, Any], list[str]]:
    """The settings of ``robustsafe train --config FILE``: a YAML mapping in the format of a run
    directory's ``config.yaml`` (read safely, a key given twice refused), any subset of its keys.

    Returns the values that name a run (``NAMING_SETTINGS``: ``{"env": ..., "seed": ...,
    "preset": ..., "algo": ..., "mode": ...}``, those the file gives) and every other setting as
    a ``KEY=VALUE`` item of ``--set``'s syntax, in file order. An unknown key, a group that is
    not a mapping or a value of the wrong type is a ValueError naming the file and the key.
    """
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"--config {path} is a directory; give its config.yaml")
    if not path.is_file():
        raise FileNotFoundError(f"--config {path}: no such file")
    data = read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: expected a mapping of settings (the format of a run's config.yaml), "
            f"got {type(data).__name__}"
        )
    naming: dict[str, Any] = {}
    sets: list[str] = []
    _flatten_settings(TrainConfig, data, "", naming, sets, path)
    if naming:  # their types and values, checked as the run's own config would be
        subset: dict[str, Any] = {}
        for key, value in naming.items():
            node = subset
            *groups, last = key.split(".")
            for g in groups:
                node = node.setdefault(g, {})
            node[last] = value
        try:
            cfg = from_dict(TrainConfig, subset)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path}: {err}") from None
        values = {k: dotted_setting(cfg, k) for k in naming}
        naming = {NAMING_SETTINGS[k]: v for k, v in values.items()}
    return naming, sets


def _flatten_settings(
    cls: type, data: dict, prefix: str, naming: dict, sets: list[str], path: Path
) -> None:
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in known:
            raise ValueError(
                f"{path}: unknown setting {name!r}; accepted"
                + (f" in {prefix.rstrip('.')}" if prefix else "")
                + f": {', '.join(known)}"
            )
        if dataclasses.is_dataclass(hints[key]):
            if not isinstance(value, dict):
                raise ValueError(f"{path}: {name} is a group of settings: expected a mapping")
            _flatten_settings(hints[key], value, f"{name}.", naming, sets, path)
        elif name in NAMING_SETTINGS:
            naming[name] = value
        else:
            try:
                sets.append(f"{name}={json.dumps(value)}")
            except (TypeError, ValueError):  # ValueError: a value that contains itself
                raise ValueError(f"{path}: {name}: not a setting value ({value!r:.80})") from None


def dotted_setting(cfg: Any, key: str) -> Any:
    """The setting ``key`` (``ppo.actor_lr``) of a config."""
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def run_status(run_dir: Path) -> tuple[int, int] | None:
    """(epochs done, epochs planned) of a run directory, or None if it holds no state."""
    state = run_dir / "state.pt"
    if not state.exists():
        return None
    cfg = load_run_config(run_dir)
    status = run_dir / "status.json"
    if status.exists():  # written right after state.pt: cheap to read
        try:
            data = json.loads(read_text_file(status))  # (a FIFO would wait for a writer)
            if data.get("state_mtime_ns") == state.stat().st_mtime_ns:
                return int(data["epoch"]), cfg.epochs
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # damaged: read the state itself
    return int(load_state(state)["epoch"]), cfg.epochs


class MetricsCSV:
    """metrics.csv: one row per epoch, appended and synced as each epoch ends."""

    def __init__(self, path: Path, keep_through_epoch: int) -> None:
        self.path = path
        self.fields: list[str] | None = None
        if path.exists():  # resuming: drop rows written after the last checkpoint
            rows = [r for r in self._rows() if int(r["epoch"]) <= keep_through_epoch]
            if rows:
                self.fields = list(rows[0].keys())
            self._rewrite(rows)

    def append(self, row: dict[str, Any]) -> None:
        """Append ``row``; a column not seen before (an off-policy learner's losses, once its
        first gradient step is taken) widens the header, the earlier rows left empty there."""
        new = self.fields is None
        if new:
            self.fields = list(row.keys())
        elif any(k not in self.fields for k in row):
            rows = self._rows()
            self.fields = self.fields + [k for k in row if k not in self.fields]
            self._rewrite(rows)
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.fields)
            if new:
                w.writeheader()
            w.writerow(row)
            f.flush()
            os.fsync(f.fileno())

    def _rows(self) -> list[dict[str, str]]:
        return read_csv_rows(self.path)

    def _rewrite(self, rows: list[dict[str, str]]) -> None:
        """Replace the file by ``rows`` under ``self.fields`` (empty without fields), atomically:
        a kill keeps the old file."""
        text = io.StringIO()
        if self.fields:
            w = csv.DictWriter(text, fieldnames=self.fields)
            w.writeheader()
            w.writerows(rows)
        write_text_atomic(self.path, text.getvalue())


TIMINGS_NAME = "timings.json"  # the grid's record of its jobs in a run (``record_timing``)
# What a run writes in its directory (``force`` deletes these, and only these).
RUN_FILES = (
    "config.yaml",
    "metrics.csv",
    "agent.pt",
    "state.pt",
    "status.json",
    "provenance.json",
    TIMINGS_NAME,
    "checkpoints",
    "tb",
    "eval.json",
    "eval_sweep.csv",
    "eval_sweep.png",
    "eval_sweep.pdf",
)
_RUN_DIRS = ("checkpoints", "tb")


def run_files_text(names: tuple[str, ...] = RUN_FILES) -> str:
    """``names`` as a list for a message, folders with a slash (``checkpoints/``)."""
    return ", ".join(f"{n}/" if n in _RUN_DIRS else n for n in names)


# What a run that died before its first epoch ended leaves (with the grid's log): restartable.
_RESTARTABLE = {LOCK_NAME, "config.yaml", "provenance.json", "tb", "train.log", TIMINGS_NAME}
# What the end of the first epoch writes before state.pt (``robustsafe.train``): a run killed
# among these holds no state to resume, and a restart writes the same epoch again.
_FIRST_EPOCH_FILES = {"metrics.csv", "agent.pt", "checkpoints"}


def _at_most_one_epoch(out: Path) -> bool:
    """Whether ``out``'s metrics.csv (if any) holds no row beyond epoch 1."""
    path = out / "metrics.csv"
    if not path.exists():
        return True
    try:
        rows = read_csv_rows(path)
    except (OSError, csv.Error, UnicodeDecodeError):
        return False  # not a first epoch's file: the caller's error names the folder
    return len(rows) <= 1 and all(r.get("epoch") == "1" for r in rows)


def read_timings(run_dir: Path) -> list[dict[str, Any]]:
    """The jobs in ``run_dir``'s ``timings.json`` ([] where there is none); ValueError for a
    file that is not such a list."""
    path = run_dir / TIMINGS_NAME
    if not path.exists():
        return []
    try:
        entries = json.loads(read_text_file(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} cannot be read ({err}); not changed") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{path} does not hold a list of jobs; not changed")
    return entries


def record_timing(run_dir: Path, entry: dict[str, Any]) -> None:
    """Write ``entry`` (one job the grid runs in ``run_dir``) into ``timings.json``: in place
    of the "running" entry of the same job and start (written when it started), else at the
    end. A file that is not a list of jobs is left as it is: ValueError, nothing is written."""
    entries = read_timings(run_dir)
    key = (entry.get("job"), entry.get("started"), "running")
    at = next(
        (
            i
            for i, e in enumerate(entries)
            if (e.get("job"), e.get("started"), e.get("exit_status")) == key
        ),
        None,
    )
    if at is None:
        entries.append(entry)
    else:
        entries[at] = entry
    write_text_atomic(run_dir / TIMINGS_NAME, json.dumps(entries, indent=1) + "\n")


def check_resumable(out: Path) -> None:
    """Refuse to resume a run that another process is writing (its first epoch has no state.pt
    yet) or that holds no training state."""
    check_unlocked(out)
    if not (out / "state.pt").exists():
        raise FileNotFoundError(f"cannot resume: {out} holds no training state (state.pt)")


def check_fresh(out: Path, force: bool) -> None:
    """Refuse to start a new run where it would replace anything, unless ``force``."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory")
    if force or not out.is_dir():
        return
    names = {p.name for p in out.iterdir() if not (p.name.startswith(".") and p.suffix == ".tmp")}
    if (out / "state.pt").exists():
        raise FileExistsError(
            f"{out} already holds a run; pass --resume to continue it, --force to start it over, "
            "or choose another --out"
        )
    if names <= _RESTARTABLE or (
        names <= _RESTARTABLE | _FIRST_EPOCH_FILES
        and "config.yaml" in names
        and _at_most_one_epoch(out)
    ):
        if "config.yaml" not in names:
            # a run writes config.yaml before its tb/ and provenance.json (and deletes it after
            # them): without it, these are someone else's
            if not names & {"tb", "provenance.json"}:
                return
            raise FileExistsError(
                f"{out} holds {', '.join(sorted(names & {'tb', 'provenance.json'}))} but no "
                "run's config.yaml; choose another --out, or pass --force to delete them and "
                "start a new run"
            )
        try:  # a run that died in (or at the end of) its first epoch: nothing to resume
            load_run_config(out)
            return
        except ValueError:
            pass
    shown = ", ".join(sorted(names - {LOCK_NAME})[:5])
    doomed = tuple(n for n in RUN_FILES if n in names)
    if doomed:
        remedy = (
            f"pass --force to delete the run files there ({run_files_text(doomed)}), keep the "
            "others, and start a new run"
        )
    else:
        remedy = "pass --force to start a new run beside them (none is a run's file: all are kept)"
    raise FileExistsError(
        f"{out} is not empty ({shown}) and holds no resumable run; choose another --out, or "
        + remedy
    )


def remove_run_files(out: Path, force: bool) -> None:
    """Delete the run files in ``out`` before a new run starts there: all of them with
    ``force``; else (a run that died in its first epoch) all but the grid's ``timings.json``,
    whose record of the attempts, and of the job now starting, goes on."""
    # config.yaml last: a deletion stopped half-way leaves a run check_fresh still recognises
    for name in (*(n for n in RUN_FILES if n != "config.yaml"), "config.yaml"):
        if name == TIMINGS_NAME and not force:
            continue
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


# What a resume may change: the run's length, the env worker processes, which step the same
# envs in the same order whatever their number, and the spacing of the kept agent snapshots
# (the numbers depend on neither)
RESUME_MAY_CHANGE = ("epochs", "workers", "checkpoint_every")
# those of them a resume takes as ``--set KEY=VALUE`` (the length has --epochs / --total-steps)
RESUME_SETS = ("workers", "checkpoint_every")


def resume_config(cfg: TrainConfig, out: Path, force: bool) -> TrainConfig:
    """The saved settings with ``cfg``'s ``RESUME_MAY_CHANGE`` (number of epochs, env workers,
    snapshot spacing); refuse any other difference."""
    saved = load_run_config(out)
    may = {k: getattr(saved, k) for k in RESUME_MAY_CHANGE}
    differ = config_differences(saved, replace(cfg, **may))
    if differ:
        raise ValueError(
            f"cannot resume {out} with other settings than the saved ones: "
            + "; ".join(differ)
            + ". A resume continues the saved settings (only the number of epochs, the env "
            "workers and checkpoint_every may change)"
        )
    status = run_status(out)
    done = status[0] if status is not None else 0
    if cfg.epochs < done:
        raise ValueError(
            f"cannot resume {out} for {cfg.epochs} epochs: it has already done {done}; "
            f"give at least {done}"
        )
    check_metrics(out / "metrics.csv", done, force)
    return replace(saved, **{k: getattr(cfg, k) for k in RESUME_MAY_CHANGE})


def config_differences(saved: TrainConfig, new: TrainConfig) -> list[str]:
    """``key: saved -> new`` for every setting that differs (dotted keys)."""
    a, b = flat_settings(saved), flat_settings(new)
    return [f"{k}: saved {a[k]!r}, asked {b.get(k)!r}" for k in a if a[k] != b.get(k)]


def check_metrics(path: Path, done: int, force: bool) -> None:
    """Refuse a resume that would silently lose or mangle the epoch history."""
    if not path.exists():
        if done > 0 and not force:
            raise FileNotFoundError(
                f"{path} is missing: resuming would lose the history of epochs 1-{done}. "
                "Restore it, or pass --force to resume without it"
            )
        return
    try:
        reader = csv.DictReader(io.StringIO(read_text_file(path, newline=""), newline=""))
        rows = list(reader)
        if reader.fieldnames is not None and "epoch" not in reader.fieldnames:
            raise KeyError("epoch")
        epochs = [int(row["epoch"]) for row in rows]
    except OSError as err:
        raise ValueError(f"{path}: cannot read it ({err}); move it away to resume") from None
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, csv.Error):
        raise ValueError(
            f"{path} is not a RobustSafe metrics file (it needs an integer 'epoch' column); "
            "move it away to resume"
        ) from None
    kept = [e for e in epochs if e <= done]  # rows after the last checkpoint are dropped
    later = len(epochs) - len(kept)
    if later > 1 and not force:  # a stopped run writes one row, at most, past its state
        raise ValueError(
            f"{path} holds {later} epochs past the training state's {done}: its state.pt is "
            "older than its history, and resuming would delete those rows. Restore the run's "
            f"state.pt, or pass --force to resume from epoch {done} all the same"
        )
    if kept != list(range(1, done + 1)) and not force:
        raise ValueError(
            f"{path} does not hold one row for each of epochs 1-{done} of the training state "
            f"({len(kept)} rows there): resuming would leave its history with gaps. Restore "
            "it, or pass --force to resume all the same"
        )


def train_metrics(run_dir: str | Path) -> list[dict[str, str]]:
    """The rows of ``run_dir``'s ``metrics.csv``, one per epoch (``read_csv_rows``)."""
    return read_csv_rows(Path(run_dir) / "metrics.csv")
