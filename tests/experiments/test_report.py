"""``robustsafe report``: the HTML page's content, checked structurally (test_report_browser.py
opens it in headless Chromium).

The page is parsed with the standard library: its tables against the Markdown tables
``robustsafe table`` writes, its figures decoded, its links resolved."""

from __future__ import annotations

import base64
import json
import shutil
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_cells import markdown_tables
from test_plots import write_run

from robustsafe.cli import main
from robustsafe.experiments.report import markdown_to_html, write_report
from robustsafe.experiments.table import collect_table
from robustsafe.experiments.table_format import format_markdown

ATTACKS = ("none", "random", "mad", "amad", "mc", "mr")
COMMITTED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "table1"


class Page(HTMLParser):
    """Tables (rows of cell texts), images, links, videos and heading ids of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.videos: list[str] = []
        self.ids: list[str] = []
        self._cell: list[str] | None = None
        self._depth = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(a["src"])
        elif tag == "a":
            self.links.append(a["href"])
        elif tag == "video":
            self.videos.append(a["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def write_eval(run: Path, mode: str, seed: int, reward: float, cost: float) -> None:
    results = [
        {
            "attack": a,
            "epsilon": 0.0 if a == "none" else 0.05,
            "reward_mean": reward,
            "cost_mean": cost if a == "none" else cost + 1,
            "episodes": [{"reward": reward, "cost": cost if a == "none" else cost + 1}] * 2,
        }
        for a in ATTACKS
    ]
    payload = {
        "env_id": "SafetyCarRun-v0",
        "train_mode": mode,
        "train_seed": seed,
        "train_preset": "fast",
        "results": results,
    }
    (run / "eval.json").write_text(json.dumps(payload))


@pytest.fixture
def grid(tmp_path) -> Path:
    root = tmp_path / "grid"
    for mode, base in (("vanilla", 100.0), ("adv-mr", 80.0)):
        for seed in (0, 1):
            run = write_run(
                root, mode, seed, {"ep_return": [1.0, 2.0 + seed], "ep_cost": [3.0, 4.0]}
            )
            write_eval(run, mode, seed, base + seed, 0.5 * seed)
    (root / "adv-mr" / "seed0" / "videos").mkdir()
    (root / "adv-mr" / "seed0" / "videos" / "natural-vs-mr-eps0.05.mp4").write_bytes(b"\0" * 8)
    (root / "adv-mr" / "seed0" / "videos" / "natural-vs-mc-eps0.05.gif").write_bytes(b"GIF89a")
    return root


def test_report_holds_tables_figures_runs_and_settings(grid, tmp_path):
    out = tmp_path / "site" / "page.html"
    assert main(["report", str(grid), "--out", str(out)]) == 0
    text = out.read_text()
    page = Page(text)
    for section in ("tables", "figures", "videos", "runs", "settings"):
        assert section in page.ids
    # every Markdown table robustsafe table writes, cell for cell
    expected = markdown_tables(format_markdown(collect_table(grid)))
    assert expected and expected[0] == page.tables[0]
    # and every other table `robustsafe table` writes for these runs (on a copy), then Runs
    copy = tmp_path / "copy"
    shutil.copytree(grid, copy)
    assert main(["table", str(copy)]) == 0
    written = [copy / "table.md", *sorted(copy.glob("table-*.md"))]
    tables = [t for md in written for t in markdown_tables(md.read_text(), marks=r"\*\*|`")]
    assert len(tables) > 1
    for table in tables:
        assert table in page.tables, f"a table is missing: {table[0][:4]} ... {len(table)} rows"
    assert len(page.tables) == len(tables) + 1
    assert any(cell.startswith("ADV-PPOL(MR)") for row in page.tables[0] for cell in row)
    # the figures: PNGs inside the page; the GIF video: shown from its file
    gif = "../grid/adv-mr/seed0/videos/natural-vs-mc-eps0.05.gif"
    assert gif in page.images
    assert [s for s in page.images if not s.startswith("data:")] == [gif]
    assert len(page.images) >= 2
    for src in page.images[:-1]:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Training curves" in text
    # one row per run, with its natural numbers and working links
    runs = page.tables[-1]
    assert runs[0][:3] == ["Env", "Method", "Seed"]
    assert len(runs) == 1 + 4
    assert ["SafetyCarRun-v0", "PPOL-vanilla", "1", "fast", "2 / 150", "101.00", "0.50"] == (
        runs[2][:7]
    )
    for href in [*page.links, *page.videos, gif]:
        if href.startswith("#"):
            assert href[1:] in page.ids
        else:
            assert (out.parent / urllib.parse.unquote(href)).exists(), href
    assert any(h.endswith("seed1/metrics.csv") for h in page.links)
    assert page.videos == ["../grid/adv-mr/seed0/videos/natural-vs-mr-eps0.05.mp4"]
    # self-contained: nothing fetched from elsewhere
    assert "http://" not in text and "https://" not in text
    assert text.count("<details>") == 2 and "cost_limit: 5.0" in text


def test_report_links_quote_special_characters(grid, tmp_path):
    """A '#', '%' or space in a directory name is quoted in the page's hrefs and srcs (unquoted,
    a browser reads '#' as the start of a fragment: the links and the video broke)."""
    odd = tmp_path / "grid #2 100%"
    grid.rename(odd)
    out, _ = write_report(odd, tmp_path / "site" / "page.html")
    page = Page(out.read_text())
    assert page.videos == ["../grid%20%232%20100%25/adv-mr/seed0/videos/natural-vs-mr-eps0.05.mp4"]
    files = [h for h in page.links if not h.startswith("#")]
    assert files and all(h.startswith("../grid%20%232%20100%25/") for h in files)
    for href in files + page.videos:
        assert "#" not in href and (out.parent / urllib.parse.unquote(href)).exists(), href


def test_report_default_path_and_errors(grid, tmp_path, capsys):
    assert main(["report", str(grid)]) == 0
    assert (grid / "report.html").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 2
    assert "holds no run directory" in capsys.readouterr().err
    (empty / "run").mkdir()  # a run's files, but settings that are not YAML: named
    (empty / "run" / "config.yaml").write_text("{{not yaml")
    (empty / "run" / "metrics.csv").write_text("epoch\n1\n")
    assert main(["report", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"{empty / 'run' / 'config.yaml'} is not a YAML mapping of settings" in err


def test_markdown_conversion_keeps_every_row_and_marks():
    md = "# Title\n\n| a | b |\n|---|---:|\n| **x** | 1 |\n| y | `2` |\n\nline one\nline two\n"
    html = markdown_to_html(md)
    page = Page(html)
    assert page.tables == [[["a", "b"], ["x", "1"], ["y", "2"]]]
    assert "<b>x</b>" in html and "<code>2</code>" in html and 'class="num"' in html
    assert "line one<br>" in html and "<h3>Title</h3>" in html
    assert Page(markdown_to_html("| a |\n|---|\n| z |")).tables == [[["a"], ["z"]]]  # at the end
    # a line of bars followed by a blank line is text, not a table with that line as its header
    lone = markdown_to_html("| a | x\n\nnext")
    assert "<table>" not in lone and "next" in lone and Page(lone).tables == []


@pytest.mark.skipif(not COMMITTED.is_dir(), reason="no committed Table 1")
def test_report_of_the_committed_table1(tmp_path):
    """The committed Table 1's page shows every table robustsafe table writes for it and the
    training curves of its 42 runs."""
    root = tmp_path / "table1"
    shutil.copytree(COMMITTED, root, ignore=shutil.ignore_patterns("*.png", "*.pdf", "*.tex"))
    page_path, notes = write_report(root)
    page = Page(page_path.read_text())
    tables = collect_table(root)
    from robustsafe.experiments.appendix import format_appendix_markdown

    expected = [
        *markdown_tables(format_markdown(tables)),
        *markdown_tables(format_markdown(tables, costs_only=True)),
        *markdown_tables(format_appendix_markdown(tables)),
    ]
    for table in expected:
        assert table in page.tables
    assert len(page.tables[-1]) == 1 + 42  # the runs
    assert len(page.images) >= 1 and notes == []


def test_odd_run_folders_do_not_stop_the_report(tmp_path, capsys):
    """A FIFO named eval.json (the report waited for a writer), a run folder whose name is not
    UTF-8 (the report failed without naming it) and a config.yaml that is not UTF-8 (the same):
    the page is written, the odd folder linked by its bytes, the bad config left out."""
    import os
    import signal

    source = Path(__file__).parents[2] / "benchmarks/results/table1/SafetyCarRun-v0/vanilla/seed0"
    runs = tmp_path / "runs"
    for name in ("fifo", os.fsdecode(b"bad\xff"), "latin"):
        (runs / name).mkdir(parents=True)
        for f in ("config.yaml", "metrics.csv"):
            shutil.copy(source / f, runs / name / f)
    os.mkfifo(runs / "fifo" / "eval.json")
    with (runs / "latin" / "config.yaml").open("ab") as f:
        f.write(b"# caf\xe9\n")
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the report waited on a FIFO"))
    signal.alarm(60)
    try:
        assert main(["report", str(runs), "--out", str(tmp_path / "r.html")]) == 0
    finally:
        signal.alarm(0)
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'href="bad%FF/' in page.replace("runs/", "") and "latin" not in page.split("<h2")[-1]


def test_an_appendix_that_cannot_be_made_leaves_the_other_tables(grid, tmp_path):
    """Two xi sweeps of one seed (an appendix figure refused) dropped Table 1 and the runs table
    from the page as well; now only the appendix part is missing, and the page says why."""
    sweep = {
        "format": "amad-xi-sweep",
        "env_id": "SafetyCarRun-v0",
        "train_mode": "vanilla",
        "train_seed": 0,
        "results": [
            {
                "attack": a,
                "epsilon": 0.0 if a == "none" else 0.05,
                "episodes": [{"reward": 1.0, "cost": 2.0}],
            }
            for a in ("none", "mad", "amad")
        ],
    }
    sweep["results"][2]["xi"] = 0.1
    for folder in ("seed0", "seed0/copy"):
        (grid / "vanilla" / folder).mkdir(exist_ok=True)
        (grid / "vanilla" / folder / "eval-xi.json").write_text(json.dumps(sweep))
    out = tmp_path / "page.html"
    assert main(["report", str(grid), "--out", str(out)]) == 0
    page = Page(out.read_text())
    assert page.tables[0] == markdown_tables(format_markdown(collect_table(grid)))[0]
    from robustsafe.experiments.runs_table import write_runs_tables

    for md in write_runs_tables(grid, tmp_path / "alone" / "table"):  # the runs tables
        if md.suffix == ".md":
            for table in markdown_tables(md.read_text(), marks=r"\*\*|`"):
                assert table in page.tables, md.name
    text = out.read_text()
    assert "No appendix tables and figures: " in text and "a seed has two xi sweeps" in text
    assert "No Table 1" not in text and "No runs table" not in text


def test_report_of_a_file_names_the_runs_folder(tmp_path, capsys):
    file = tmp_path / "eval.json"
    file.write_text("{}")
    assert main(["report", str(file)]) == 2
    assert "is not a directory of runs" in capsys.readouterr().err
