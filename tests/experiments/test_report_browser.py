"""``robustsafe report`` in a real browser: headless Chromium opens the page of the committed
Table 1 from a ``file://`` URL and the test reads what it shows.

The browser is Debian's ``chromium`` with its ``chromedriver`` (package ``chromium-driver``),
driven by selenium (the ``test`` extra). ``scripts/setup.sh`` installs the two packages when it
runs as root with apt-get (as CI does); elsewhere, without them, these tests skip and say why.
In CI as root with apt-get a missing browser fails them instead: the set-up should have put it
there. ``CHROMIUM`` and ``CHROMEDRIVER`` name other binaries.

What is expected comes from the committed files, not from the report code: the tables of the
committed ``table*.md`` files (cell for cell; their shape also checked against ``table.csv``),
one Runs row per committed run directory, and the committed figure (``training_curves.png``),
which the page's rendered figure must resemble. The page must show all of it: every image
decoded, every video playable, every link to a per-run file resolving, and a full-page
screenshot with content where the tables and figures are (content, not pixels). The last test
tampers with a good page (a table dropped, a figure dropped, blanked or pointed to a missing
file, a run's link broken) and expects each check to notice.
"""

from __future__ import annotations

import base64
import csv
import io
import os
import re
import shutil
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from markdown_cells import markdown_tables

from robustsafe.experiments.report import write_report

COMMITTED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "table1"
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1280, 900)
SECTIONS = ("tables", "figures", "videos", "runs", "settings")
RUN_FILES = ("config.yaml", "metrics.csv", "eval.json")

pytestmark = pytest.mark.skipif(not COMMITTED.is_dir(), reason="no committed Table 1")


# ----------------------------------------------------------------------------- the browser


def _must_run() -> bool:
    """CI as root with apt-get: scripts/setup.sh installed the browser there."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    ci = os.environ.get("CI", "").lower() not in ("", "0", "false")
    return ci and root and shutil.which("apt-get") is not None


def _unavailable(reason: str) -> None:
    if _must_run():
        pytest.fail(f"{reason}; in CI as root with apt-get the set-up should have installed it")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (it is in the test extra: pip install -e .[test])")
    chromium = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, CHROMIUMS)), None)
    driver = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    if not chromium or not driver:
        _unavailable(
            "no Chromium and chromedriver on PATH (Debian: apt-get install chromium "
            "chromium-driver, which scripts/setup.sh does as root; or set CHROMIUM and "
            "CHROMEDRIVER)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium  # with the driver's path below: no Selenium Manager
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root (CI) has no sandbox; the page is a local file
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        "--mute-audio",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ):
        options.add_argument(arg)
    drv = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield drv
    finally:
        drv.quit()


_COLLECT = """
const box = e => { const b = e.getBoundingClientRect();
  return [b.left + window.scrollX, b.top + window.scrollY, b.width, b.height]; };
const caption = e => { const f = e.closest('figure'); const c = f && f.querySelector('figcaption');
  return c ? c.innerText : null; };
return {
  ready: document.readyState,
  width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
  ids: Array.from(document.querySelectorAll('[id]'), e => e.id),
  tables: Array.from(document.querySelectorAll('table'), t => ({box: box(t),
    rows: Array.from(t.rows, r => Array.from(r.cells, c => c.innerText.trim()))})),
  images: Array.from(document.images, i => ({src: i.getAttribute('src'), url: i.currentSrc || i.src,
    complete: i.complete, w: i.naturalWidth, h: i.naturalHeight, box: box(i),
    caption: caption(i)})),
  videos: Array.from(document.querySelectorAll('video'), v => ({url: v.currentSrc || v.src,
    ready: v.readyState, error: v.error ? v.error.code : null, w: v.videoWidth,
    h: v.videoHeight})),
  links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
};
"""


@dataclass
class Shown:
    """What the browser shows of a page: its DOM read back, and a full-page screenshot."""

    page: Path
    data: dict
    png: bytes
    screenshot: object = field(repr=False)  # PIL image


def show(browser, page: Path, video_wait_s: float = 10.0, load_wait_s: float = 120.0) -> Shown:
    """Open ``page`` and read it back once the document has loaded (``readyState`` complete:
    parsed to its end, images decoded) and every video has data or an error. ``browser.get``
    alone is not enough: under load chromedriver has returned while the parser was still in
    the middle of a large page (the DOM held the tables but not the figures after them)."""
    from PIL import Image

    browser.get(page.resolve().as_uri())
    start, loaded = time.monotonic(), None
    while True:
        data = browser.execute_script(_COLLECT)
        now = time.monotonic()
        if data["ready"] != "complete":
            if now - start > load_wait_s:
                raise AssertionError(
                    f"{page.name}: still {data['ready']!r} after {now - start:.0f} s"
                )
        else:
            loaded = loaded or now
            settled = all(v["ready"] >= 1 or v["error"] for v in data["videos"])
            if settled or now - loaded > video_wait_s:
                break
        time.sleep(0.1)
    size = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    png = base64.b64decode(shot["data"])
    return Shown(page, data, png, Image.open(io.BytesIO(png)).convert("RGB"))


# ----------------------------------------------------------------------------- what is expected


@dataclass
class Expected:
    tables: list[list[list[str]]] | None  # every table but Runs, cell for cell (None: unchecked)
    runs: set[tuple[str, str, str]]  # (env, method, seed) of the Runs table
    run_files: set[Path]  # the per-run files the page must link
    figures: list[Path] | None  # PNGs the page's figures must resemble (None: unchecked)
    videos: list[Path]  # *.mp4 in a <video>, *.gif in an <img>


def committed_expectation(root: Path) -> Expected:
    """From the committed files under ``root`` (a copy of benchmarks/results/table1)."""
    with (root / "table.csv").open() as f:
        rows = list(csv.DictReader(f))
    method = {(r["env"], r["mode"]): r["method"] for r in rows}
    runs, run_files = set(), set()
    for cfg in sorted(root.glob("*/*/seed*/config.yaml")):
        env, mode, seed = cfg.parent.relative_to(root).parts
        runs.add((env, method[env, mode], seed.removeprefix("seed")))
        run_files |= {cfg.parent / n for n in RUN_FILES if (cfg.parent / n).exists()}
    mds = [root / "table.md", *sorted(root.glob("table-*.md"))]  # Table 1 first
    # the cells as the page shows them: no ** or ` marks
    tables = [t for md in mds for t in markdown_tables(md.read_text(), marks=r"\*\*|`")]
    return Expected(tables, runs, run_files, figures=[root / "training_curves.png"], videos=[])


# ----------------------------------------------------------------------------- the checks


def _thumb(image, n: int = 32) -> np.ndarray:
    from PIL import Image

    return np.asarray(image.convert("L").resize((n, n), Image.Resampling.BOX), dtype=float)


def _looks_like(crop, reference, min_corr: float = 0.9) -> float:
    a, b = _thumb(crop).ravel(), _thumb(reference).ravel()
    assert a.std() > 5 and b.std() > 5, "a uniform region where a figure should be"
    corr = float(np.corrcoef(a, b)[0, 1])
    assert corr > min_corr, f"the rendered figure does not look like its source (corr {corr:.2f})"
    return corr


def _crop(shown: Shown, box: list[float]):
    x, y, w, h = box
    assert w > 20 and h > 20, f"an element rendered at {w:.0f} x {h:.0f} px"
    return shown.screenshot.crop((round(x), round(y), round(x + w), round(y + h)))


def _file_of(url: str) -> Path:
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme == "file", f"not a local file (the page is self-contained): {url}"
    return Path(urllib.parse.unquote(parts.path))


def check_page(shown: Shown, expected: Expected) -> None:
    """AssertionError unless the browser shows everything ``expected`` names, all loaded."""
    from PIL import Image

    d = shown.data
    page = shown.page.resolve()
    for section in SECTIONS:
        assert section in d["ids"], f"no #{section} section"
    # tables: every expected one, cell for cell, then Runs: one row per run
    tables = [t["rows"] for t in d["tables"]]
    if expected.tables is not None:
        for table in expected.tables:
            assert table in tables, f"a table is missing: {table[0][:4]} ... {len(table)} rows"
        assert len(tables) == len(expected.tables) + 1, f"{len(tables)} tables"
    runs = tables[-1]
    assert runs[0][:3] == ["Env", "Method", "Seed"], runs[0]
    assert len(runs) - 1 == len(expected.runs)
    assert {tuple(r[:3]) for r in runs[1:]} == expected.runs
    # images: every one decoded; the figures (embedded) and the GIF videos (files)
    for img in d["images"]:
        assert img["complete"] and img["w"] > 0 and img["h"] > 0, f"not loaded: {img['src'][:60]}"
    figures = [i for i in d["images"] if i["src"].startswith("data:image/png;base64,")]
    assert figures, "no figure"
    if expected.figures is not None:
        assert len(figures) == len(expected.figures), f"{len(figures)} figures"
    gifs = [v for v in expected.videos if v.suffix == ".gif"]
    files = [i for i in d["images"] if not i["src"].startswith("data:")]
    assert sorted(_file_of(i["url"]) for i in files) == sorted(v.resolve() for v in gifs)
    # videos: metadata read (the file found and decodable)
    mp4s = [v.resolve() for v in expected.videos if v.suffix == ".mp4"]
    assert sorted(_file_of(v["url"]) for v in d["videos"]) == sorted(mp4s)
    for v in d["videos"]:
        assert v["error"] is None and v["ready"] >= 1 and v["w"] > 0, f"video not loaded: {v}"
    # links: anchors to the page's sections, the rest to files that exist
    targets = set()
    for url in d["links"]:
        target = _file_of(url)
        if target == page:
            fragment = urllib.parse.urlsplit(url).fragment
            assert fragment in d["ids"], f"a link to a missing section: {url}"
        else:
            assert target.exists(), f"a broken link: {url}"
            targets.add(target)
    missing = {f.resolve() for f in expected.run_files} - targets
    assert not missing, f"per-run files not linked: {sorted(missing)[:3]}"
    # the screenshot: a PNG of the whole page, with content (not pixels) where things are
    assert shown.png[:8] == b"\x89PNG\r\n\x1a\n"
    shot = shown.screenshot
    assert shot.size == (d["width"], d["height"]), (shot.size, d["width"], d["height"])
    pixels = np.asarray(shot, dtype=np.int16)
    inked = (pixels < 200).any(axis=2).mean()  # darker than the page's light greys
    assert inked > 0.02, f"a near-blank page ({inked:.3%} inked)"
    colours = shot.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 1000, "a page of few colours"
    for t in d["tables"]:
        cells = np.asarray(_crop(shown, t["box"]).convert("L"))
        assert (cells < 128).mean() > 0.01, "a table without visible text"
    for img in figures:
        source = Image.open(io.BytesIO(base64.b64decode(img["src"].split(",", 1)[1])))
        _looks_like(_crop(shown, img["box"]), source)
    for ref in expected.figures or []:  # each expected figure is one of those shown
        crops = [_crop(shown, img["box"]) for img in figures]
        assert any(_corr_ok(c, Image.open(ref)) for c in crops), f"{ref.name} not shown"
    for img in files:
        _looks_like(_crop(shown, img["box"]), Image.open(_file_of(img["url"])))


def _corr_ok(crop, reference) -> bool:
    try:
        _looks_like(crop, reference)
    except AssertionError:
        return False
    return True


# ----------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def table1_page(tmp_path_factory) -> tuple[Path, Expected]:
    """The report of a copy of the committed Table 1 (nothing in the repository is written)."""
    root = tmp_path_factory.mktemp("report") / "table1"
    shutil.copytree(COMMITTED, root)
    page, notes = write_report(root)
    assert notes == []
    return page, committed_expectation(root)


def test_expectation_agrees_with_table_csv():
    """The committed tables the page must show have table.csv's shape: one row per (env,
    method), reward and cost per attack; one run per seed."""
    expected = committed_expectation(COMMITTED)
    with (COMMITTED / "table.csv").open() as f:
        rows = list(csv.DictReader(f))
    pairs = list(dict.fromkeys((r["env"], r["method"], r["failing"] == "true") for r in rows))
    attacks = list(dict.fromkeys(r["attack"] for r in rows))
    table1 = expected.tables[0]
    assert len(table1) == 1 + len(pairs) and len(pairs) == 14
    assert {len(r) for r in table1} == {4 + 2 * len(attacks)}
    assert [r[1] for r in table1[1:]] == [m + "*" * failing for _, m, failing in pairs]
    seeds = sum(int(r["n_seeds"]) for r in rows if r["attack"] == "none")
    assert len(expected.runs) == seeds == 42
    # Table 1, the appendix's, its costs, the per-run table, the runs counted per method
    assert len(expected.tables) == 5
    assert len(expected.tables[-2]) == 1 + seeds  # one line per run
    assert len(expected.tables[-1]) == 1 + len(pairs)  # one line per method


def test_committed_table1_report_in_chromium(browser, table1_page):
    page, expected = table1_page
    start = time.monotonic()
    shown = show(browser, page)
    check_page(shown, expected)
    assert shown.data["videos"] == []  # Table 1 has none: the next test shows some
    print(f"shown and checked in {time.monotonic() - start:.1f} s")


def _frames(n: int = 6, h: int = 64, w: int = 96) -> list[np.ndarray]:
    """Identical frames (any frame the browser paints looks the same): a gradient, a box."""
    frame = np.zeros((h, w, 3), np.uint8)
    frame[..., 0] = np.linspace(0, 255, w, dtype=np.uint8)[None, :]
    frame[..., 2] = np.linspace(255, 0, h, dtype=np.uint8)[:, None]
    frame[16:48, 24:56] = (250, 250, 40)
    return [frame] * n


def test_videos_and_odd_directory_names_in_chromium(browser, tmp_path):
    """An MP4 (when imageio-ffmpeg is there, as robustsafe evaluate --video writes it) plays in
    a <video>, a GIF shows in an <img>; links and sources hold under a directory named with
    '#', '%' and spaces, with the page written outside it."""
    import imageio.v2 as imageio

    from robustsafe.video import write_video

    root = tmp_path / "grid #2 (100%)"
    shutil.copytree(COMMITTED / "SafetyCarRun-v0" / "vanilla", root / "vanilla")
    out = root / "vanilla" / "seed0" / "videos"
    out.mkdir()
    videos = [write_video(_frames(), out / "natural-vs-mr-eps0.05.mp4", fps=5)]
    imageio.mimsave(out / "natural-vs-mc-eps0.05.gif", _frames(), duration=200, loop=0)
    videos.append(out / "natural-vs-mc-eps0.05.gif")
    page, _ = write_report(root, tmp_path / "site" / "report.html")
    runs = {("SafetyCarRun-v0", "PPOL-vanilla", s) for s in "012"}
    files = {p for p in root.glob("vanilla/seed*/*") if p.name in RUN_FILES}
    expected = Expected(None, runs, files, figures=None, videos=videos)
    shown = show(browser, page)
    check_page(shown, expected)
    gif = next(i for i in shown.data["images"] if i["src"].endswith(".gif"))
    assert (gif["w"], gif["h"]) == (96, 64)
    for v in shown.data["videos"]:
        assert (v["w"], v["h"]) == (96, 64)


def _white_png(w: int, h: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _break(text: str, how: str) -> str:
    figure = r'src="data:image/png;base64,[^"]*"'
    if how == "drop a table":
        broken = re.sub(
            r'<section class="table" id="table-costs">.*?</section>', "", text, count=1, flags=re.S
        )
    elif how == "drop the figure":
        broken = re.sub(r"<figure><img [^>]*>.*?</figure>", "", text, count=1, flags=re.S)
    elif how == "figure path broken":
        broken = re.sub(figure, 'src="figures/training_curves.png"', text, count=1)
    elif how == "figure blank":
        broken = re.sub(
            figure, f'src="data:image/png;base64,{_white_png(2160, 912)}"', text, count=1
        )
    elif how == "run link broken":
        broken = text.replace('seed1/metrics.csv"', 'seed1/metrics.csv.gz"', 1)
    else:
        raise ValueError(how)
    assert broken != text, how
    return broken


@pytest.mark.parametrize(
    "how",
    ["drop a table", "drop the figure", "figure path broken", "figure blank", "run link broken"],
)
def test_the_checks_notice_a_broken_page(browser, table1_page, how):
    page, expected = table1_page
    broken = page.with_name(f"broken-{how.replace(' ', '-')}.html")
    broken.write_text(_break(page.read_text(), how))
    with pytest.raises(AssertionError) as err:
        check_page(show(browser, broken), expected)
    print(f"{how}: {str(err.value).splitlines()[0]}")


class _SlowDriver:
    """A stand-in for the Chromium driver whose ``get`` returns before the page has loaded:
    the first reads see a half-parsed page (``loading``, no #figures), then the whole one."""

    def __init__(self, reads_before_complete: int):
        self.left = reads_before_complete
        self.reads = 0

    def get(self, url: str) -> None:
        pass

    def execute_script(self, script: str) -> dict:
        self.reads += 1
        done = self.reads > self.left
        ids = ["tables", "table"] + (["figures", "runs", "settings"] if done else [])
        return {"ready": "complete" if done else "loading", "ids": ids, "videos": []}

    def execute_cdp_cmd(self, cmd: str, args: dict) -> dict:
        if cmd == "Page.getLayoutMetrics":
            return {"cssContentSize": {"width": 4, "height": 3}}
        return {"data": _white_png(4, 3)}


def test_show_waits_for_the_page_to_finish_loading(tmp_path):
    """``show`` reads the page only once it is complete, however early ``get`` returned, and
    says so when a page never completes."""
    driver = _SlowDriver(reads_before_complete=3)
    shown = show(driver, tmp_path / "page.html")
    assert driver.reads == 4 and "figures" in shown.data["ids"]
    assert shown.screenshot.size == (4, 3)
    with pytest.raises(AssertionError, match="still 'loading'"):
        show(_SlowDriver(reads_before_complete=10**9), tmp_path / "page.html", load_wait_s=0.3)
