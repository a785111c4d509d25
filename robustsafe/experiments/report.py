"""``robustsafe report DIR``: one self-contained HTML page of a grid's results.

The page holds, from the run directories under ``DIR`` (every ``config.yaml`` with a
``metrics.csv`` or an ``eval.json`` beside it):

- the tables of ``robustsafe table`` (Table 1, and the appendix's tables where the runs have
  their evaluations), converted from the Markdown ``robustsafe.experiments.table_format`` and
  ``appendix`` write;
- the figures, embedded as base64 PNG: the training curves (``robustsafe plot curves``, seeds
  as bands) and the appendix's figures (AMAD over xi, the MC/MR mixture) where they apply;
- the videos found under ``DIR`` (``*.mp4`` in a ``<video>``, ``*.gif`` in an ``<img>``), shown
  and linked with a relative path;
- one row per run: env, method, seed, preset, epochs, natural reward and cost, and links to its
  directory, ``config.yaml``, ``metrics.csv`` and ``eval.json``;
- the settings: each (env, method)'s ``config.yaml`` (its first seed's; seeds differ only in
  ``seed``).

Links are relative to the page and URL-quoted (a directory named ``grid #2`` or ``100%`` still
resolves), so the page works when ``DIR`` is moved as a whole; the tables and figures need
nothing else. ``tests/experiments/test_report_browser.py`` opens the page in headless Chromium.
"""

from __future__ import annotations

import base64
import html
import os
import re
import tempfile
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from robustsafe.experiments.names import (
    algo_key,
    env_key,
    learner_group,
    method_key,
    method_name,
)
from robustsafe.files import (
    find_named,
    parse_yaml,
    read_json,
    read_text_file,
    walk_files,
    write_text_atomic,
)

if TYPE_CHECKING:  # annotations only: the helpers import these modules where they run
    from robustsafe.experiments.plots import TrainingRun
    from robustsafe.experiments.table import ResultsTable

REPORT_NAME = "report.html"
_CSS = """
body { font-family: sans-serif; margin: 2em; max-width: 100em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; }
th { background: #eee; }
td.num { text-align: right; white-space: nowrap; }
img { max-width: 100%; border: 1px solid #ddd; }
pre { background: #f6f6f6; padding: 0.5em; font-size: 0.8em; }
figure { margin: 1em 0 2em 0; }
"""


@dataclass(frozen=True)
class RunInfo:
    path: Path
    env_id: str
    algo: str
    mode: str
    seed: int | None
    preset: str
    epochs_planned: int | None
    epochs_done: int
    natural: tuple[float, float] | None  # mean reward, mean cost
    config_text: str


def find_runs(runs_dir: Path, unreadable: list[Path] | None = None) -> list[RunInfo]:
    """Every run directory under ``runs_dir``: a ``config.yaml`` with ``metrics.csv`` or
    ``eval.json`` beside it. Such a config.yaml that is not a YAML mapping is skipped, and
    appended to ``unreadable`` where given."""
    runs = []
    for cfg_path in find_named(runs_dir, "config.yaml"):
        run = cfg_path.parent
        if not ((run / "metrics.csv").exists() or (run / "eval.json").exists()):
            continue
        try:
            text = read_text_file(cfg_path)
            cfg = parse_yaml(text, cfg_path) or {}
        except (OSError, ValueError):
            cfg = None
        if not isinstance(cfg, dict):
            if unreadable is not None:
                unreadable.append(cfg_path)
            continue
        done = 0
        if (run / "metrics.csv").is_file():  # (not a FIFO, which would wait for a writer)
            lines = (run / "metrics.csv").read_bytes().splitlines()  # (any encoding: a count)
            done = max(0, len([ln for ln in lines if ln.strip()]) - 1)
        natural = None
        if (run / "eval.json").exists():
            try:
                data = read_json(run / "eval.json")
                nat = next(r for r in data["results"] if r["attack"] == "none")
                natural = (float(nat["reward_mean"]), float(nat["cost_mean"]))
            except (ValueError, KeyError, TypeError, StopIteration, OverflowError, RecursionError):
                natural = None
        robust = cfg.get("robust") if isinstance(cfg.get("robust"), dict) else {}
        seed = cfg.get("seed")
        epochs = cfg.get("epochs")
        runs.append(
            RunInfo(
                path=run,
                env_id=str(cfg.get("env_id", "?")),
                algo=_learner(cfg),
                mode=str(robust.get("mode", "vanilla")),
                seed=seed if isinstance(seed, int) else None,
                preset=str(cfg.get("preset", "")),
                epochs_planned=epochs if isinstance(epochs, int) else None,
                epochs_done=done,
                natural=natural,
                config_text=text,
            )
        )
    runs.sort(
        key=lambda r: (
            env_key(r.env_id),
            algo_key(r.algo),
            method_key(r.mode),
            r.seed if r.seed is not None else -1,
        )
    )
    return runs


# ----------------------------------------------------------------------------- Markdown


def _inline(text: str) -> str:
    """Escape, then the Markdown the tables use: **bold**, `code`."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_rule(line: str) -> bool:
    """Whether ``line`` is a Markdown table's header rule (``|---|--:|``; a blank line is not)."""
    return line.startswith("|") and "-" in line and set(line) <= set("|-: ")


def markdown_to_html(text: str) -> str:
    """The Markdown ``robustsafe table`` writes: headings, pipe tables, paragraphs."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")) + 2, 6)  # below the page's own
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
            i += 1
        elif line.startswith("|") and i + 1 < len(lines) and _is_rule(lines[i + 1]):
            head = _cells(line)
            aligns = ["num" if c.endswith(":") else "" for c in _cells(lines[i + 1])]
            out.append("<table>\n<tr>" + "".join(f"<th>{_inline(h)}</th>" for h in head) + "</tr>")
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = _cells(lines[i])
                out.append(
                    "<tr>"
                    + "".join(
                        f'<td class="{aligns[k] if k < len(aligns) else ""}">{_inline(c)}</td>'
                        for k, c in enumerate(row)
                    )
                    + "</tr>"
                )
                i += 1
            out.append("</table>")
        elif line.strip():
            para = [line.strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("|", "#")):
                para.append(lines[i].strip())
                i += 1
            out.append("<p>" + "<br>\n".join(_inline(p) for p in para) + "</p>")
        else:
            i += 1
    return "\n".join(out)


# ----------------------------------------------------------------------------- the page


def _png_figure(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _href(target: Path, page_dir: Path) -> str:
    """``target`` relative to ``page_dir`` as an escaped URL: quoted, so that ``#``, ``?``, ``%``
    or a space in a directory name stays part of the path (a name that is not UTF-8 by its
    bytes)."""
    rel = Path(os.path.relpath(target, page_dir)).as_posix()
    return html.escape(urllib.parse.quote(os.fsencode(rel), safe="/"))


def _link(target: Path, page_dir: Path, text: str) -> str:
    if not target.exists():
        return ""
    return f'<a href="{_href(target, page_dir)}">{html.escape(text)}</a>'


def _learner(cfg: dict) -> str:
    """A run's learner as the tables group it (SAC-Lag per entropy weight)."""
    sac = cfg.get("sac") if isinstance(cfg.get("sac"), dict) else {}
    return learner_group(str(cfg.get("algo", "ppol")), sac.get("alpha"), sac.get("learn_alpha"))


def write_report(runs_dir: str | Path, out: str | Path | None = None) -> tuple[Path, list[str]]:
    """Write the page (default ``DIR/report.html``); returns its path and notes (what could
    not be included). ValueError if ``runs_dir`` holds no run."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    page = Path(out) if out is not None else root / REPORT_NAME
    page_dir = page.resolve().parent
    runs = _report_runs(root)
    notes: list[str] = []
    body = _intro(root, runs)
    with tempfile.TemporaryDirectory(prefix="robustsafe-report-") as tmp:
        tables, files = _tables_section(root, Path(tmp), notes)
        body += tables
        body += _figures_section(runs, files, Path(tmp), notes)
    body += _videos_section(root, page_dir)
    body += ['<h2 id="runs">Runs</h2>', _runs_table(runs, page_dir)]
    body += _settings_section(runs)
    body += _notes_section(notes)
    write_text_atomic(page, _page_text(root, body))
    return page, notes


def _report_runs(root: Path) -> list[RunInfo]:
    """The runs under ``root`` (``find_runs``); ValueError if it holds none."""
    unreadable: list[Path] = []
    runs = find_runs(root, unreadable)
    if not runs:
        why = f"; {unreadable[0]} is not a YAML mapping of settings" if unreadable else ""
        raise ValueError(
            f"{root} holds no run directory (config.yaml with metrics.csv/eval.json){why}"
        )
    return runs


def _intro(root: Path, runs: Sequence[RunInfo]) -> list[str]:
    """The page's heading and its first paragraph: how many runs, on which envs, the sections."""
    envs = sorted({r.env_id for r in runs}, key=env_key)
    return [
        f"<h1>RobustSafe report: {html.escape(str(root))}</h1>",
        f"<p>{len(runs)} runs on {html.escape(', '.join(envs))}. Sections: "
        '<a href="#tables">tables</a>, <a href="#figures">figures</a>, '
        '<a href="#videos">videos</a>, <a href="#runs">runs</a>, '
        '<a href="#settings">settings</a>.</p>',
    ]


def _tables_section(root: Path, tmp_dir: Path, notes: list[str]) -> tuple[list[str], list[Path]]:
    """The Tables section, and every file ``robustsafe table``'s writers made (figures too)."""
    from robustsafe.experiments.table import collect_table

    body = ['<h2 id="tables">Tables</h2>']
    try:
        table = collect_table(root)
    except (ValueError, FileNotFoundError) as err:
        notes.append(f"no tables: {err}")
        body.append(f"<p>No table: {html.escape(str(err))}</p>")
        return body, []
    files, missing = _write_table_files(root, tmp_dir / "table", table, notes)
    return body + missing + _markdown_sections(files), files


def _write_table_files(
    root: Path, prefix: Path, table: ResultsTable, notes: list[str]
) -> tuple[list[Path], list[str]]:
    """Each table writer's files at ``prefix``, and a paragraph for each that could not write."""
    from robustsafe.experiments.appendix import write_appendix
    from robustsafe.experiments.runs_table import write_runs_tables
    from robustsafe.experiments.table_format import write_tables

    files: list[Path] = []
    missing: list[str] = []
    for what, write in (  # each on its own: one that cannot be made leaves the others
        ("Table 1", write_tables),
        ("appendix tables and figures", write_appendix),
        ("runs table", write_runs_tables),
    ):
        try:
            files += write(root, prefix, table=table)
        except (ValueError, FileNotFoundError) as err:
            notes.append(f"no {what}: {err}")
            missing.append(f"<p>No {what}: {html.escape(str(err))}</p>")
    return files, missing


def _markdown_sections(files: Sequence[Path]) -> list[str]:
    """Each Markdown file among ``files`` as an HTML section named after it."""
    body = []
    for md in [f for f in files if f.suffix == ".md"]:
        body.append(f'<section class="table" id="{html.escape(md.stem)}">')
        body.append(markdown_to_html(md.read_text()))
        body.append("</section>")
    return body


def _figures_section(
    runs: Sequence[RunInfo], files: Sequence[Path], tmp_dir: Path, notes: list[str]
) -> list[str]:
    """The Figures section: the training curves, then the PNG figures among ``files``."""
    figures = _curves_figure(runs, tmp_dir / "curves", notes)
    for f in files:
        if f.suffix == ".png":
            figures.append((f, f"{f.stem} (robustsafe table's appendix figure)"))
    body = ['<h2 id="figures">Figures</h2>']
    body += [_png_figure(path, caption) for path, caption in figures]
    if not figures:
        body.append("<p>No figure.</p>")
    return body


def _curves_figure(
    runs: Sequence[RunInfo], prefix: Path, notes: list[str]
) -> list[tuple[Path, str]]:
    """The training curves figure with its caption (none where no run has a history)."""
    from robustsafe.experiments.plots import write_curves_figure

    trained = _training_histories(runs, notes)
    if not trained:
        return []
    try:
        paths, curve_notes = write_curves_figure(trained, prefix, smooth=10)
    except ValueError as err:
        notes.append(f"no training curves: {err}")
        return []
    notes += curve_notes
    caption = (
        "Training curves: mean across seeds, band = std across seeds, each "
        "seed averaged over its last 10 epochs"
    )
    return [(paths[0], caption)]


def _training_histories(runs: Sequence[RunInfo], notes: list[str]) -> list[TrainingRun]:
    """The ``metrics.csv`` history of each run with one; a note for each that cannot be read."""
    from robustsafe.experiments.plots import load_training_run

    trained = []
    for r in runs:
        if (r.path / "metrics.csv").exists():
            try:
                trained.append(load_training_run(r.path))
            except ValueError as err:
                notes.append(str(err))
    return trained


def _videos_section(root: Path, page_dir: Path) -> list[str]:
    """The Videos section: every ``*.mp4`` and ``*.gif`` under ``root``, shown and linked."""
    body = ['<h2 id="videos">Videos</h2>']
    videos = sorted(p for p in walk_files(root) if p.suffix in (".mp4", ".gif"))
    if not videos:
        body.append("<p>No video (<code>robustsafe evaluate --video DIR</code> makes them).</p>")
    body += [_video_figure(v, root, page_dir) for v in videos]
    return body


def _video_figure(video: Path, root: Path, page_dir: Path) -> str:
    """One video in a ``<figure>``, captioned with its link (its path under ``root``)."""
    href = _href(video.resolve(), page_dir)
    name = html.escape(video.relative_to(root).as_posix())
    shown = (
        f'<video controls src="{href}" width="640"></video>'
        if video.suffix == ".mp4"
        else f'<img src="{href}" alt="{name}" width="640">'  # a GIF (no imageio-ffmpeg)
    )
    caption = f'<figcaption><a href="{href}">{name}</a></figcaption>'
    return f"<figure>{shown}{caption}</figure>"


def _settings_section(runs: Sequence[RunInfo]) -> list[str]:
    """The Settings section: each (env, learner, mode, preset)'s first ``config.yaml``."""
    body = ['<h2 id="settings">Settings</h2>']
    seen: set[tuple[str, str, str, str]] = set()
    for r in runs:
        key = (r.env_id, r.algo, r.mode, r.preset)
        if key in seen:
            continue
        seen.add(key)
        seeds = [s.seed for s in runs if (s.env_id, s.algo, s.mode, s.preset) == key]
        body.append(
            f"<details><summary>{html.escape(r.env_id)}: "
            f"{html.escape(method_name(r.mode, r.algo))} ({html.escape(r.preset)}; seeds "
            f"{html.escape(', '.join(str(s) for s in seeds))})</summary>"
            f"<pre>{html.escape(r.config_text)}</pre></details>"
        )
    return body


def _notes_section(notes: Sequence[str]) -> list[str]:
    """The Notes section, a list item per note (nothing without notes)."""
    if not notes:
        return []
    return ["<h2>Notes</h2><ul>", *(f"<li>{html.escape(n)}</li>" for n in notes), "</ul>"]


def _page_text(root: Path, body: Sequence[str]) -> str:
    """The whole HTML document around ``body``."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>RobustSafe report: {html.escape(str(root))}</title>\n"
        f"<style>{_CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def _runs_table(runs: Sequence[RunInfo], page_dir: Path) -> str:
    head = (
        "Env",
        "Method",
        "Seed",
        "Preset",
        "Epochs",
        "Natural reward",
        "Natural cost",
        "Files",
    )
    rows = ["<table>", "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for r in runs:
        planned = "" if r.epochs_planned is None else f" / {r.epochs_planned}"
        reward, cost = (
            ("", "") if r.natural is None else (f"{r.natural[0]:.2f}", f"{r.natural[1]:.2f}")
        )
        links = " ".join(
            x
            for x in (
                _link(r.path.resolve(), page_dir, "run"),
                _link((r.path / "config.yaml").resolve(), page_dir, "config.yaml"),
                _link((r.path / "metrics.csv").resolve(), page_dir, "metrics.csv"),
                _link((r.path / "eval.json").resolve(), page_dir, "eval.json"),
            )
            if x
        )
        rows.append(
            "<tr>"
            f"<td>{html.escape(r.env_id)}</td><td>{html.escape(method_name(r.mode, r.algo))}</td>"
            f'<td class="num">{"" if r.seed is None else r.seed}</td>'
            f"<td>{html.escape(r.preset)}</td>"
            f'<td class="num">{r.epochs_done}{planned}</td>'
            f'<td class="num">{reward}</td><td class="num">{cost}</td>'
            f"<td>{links}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)
