"""The README and docs/ stay true to the code: the fresh-machine commands, the default preset,
links, zoo paths and the Table 1 markers."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from robustsafe.choices import ALGOS, check_mode

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def _first_block() -> list[str]:
    text = README.read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block and text.index(block.group(0)) < 40, "the README must open with its commands"
    return block.group(1).strip().splitlines()


def test_readme_opens_with_the_two_fresh_machine_commands_and_ci_runs_the_test_one():
    lines = _first_block()
    commands = [line for line in lines if not line.startswith("#")]
    assert len(commands) == 2
    main_job, tests = commands
    assert main_job.startswith("bash scripts/setup.sh && .venv/bin/robustsafe train ")
    assert tests == "bash scripts/setup.sh && .venv/bin/python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == tests  # .ci/run runs the README's test command, word for word


def test_quickstart_trains_with_the_default_preset():
    from robustsafe.cli import build_parser
    from robustsafe.cli.train import DEFAULT_PRESET, train_settings

    main_job = next(line for line in _first_block() if not line.startswith("#"))
    train = next(part for part in main_job.split(" && ") if " train " in f" {part} ")
    argv = shlex.split(train)[1:]  # after .venv/bin/robustsafe
    cfg, _ = train_settings(build_parser().parse_args(argv))
    assert cfg.preset == DEFAULT_PRESET == "fast"


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, re.M)}


def test_every_relative_link_of_the_readme_and_docs_resolves():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_zoo_paths_named_in_the_readme_and_usage_exist():
    named = set()
    for page in (README, ROOT / "docs" / "usage.md"):
        named |= set(re.findall(r"zoo/(Safety\w+-v\d)/([\w-]+)", page.read_text()))
    assert named, "the tour attacks a zoo agent"
    missing = [f"zoo/{e}/{m}" for e, m in named if not (ROOT / "zoo" / e / m / "agent.pt").exists()]
    assert not missing


def test_zoo_has_one_directory_per_training_mode():
    """``zoo/<env>/<mode>`` for PPOL, ``zoo/<env>/<learner>-<mode>`` for the other learners (the
    grid's run-directory names); never a second name for the same agent (such as ppol)."""
    import yaml

    for agent in (ROOT / "zoo").glob("*/*/agent.pt"):
        name = agent.parent.name
        cfg = yaml.safe_load((agent.parent / "config.yaml").read_text())
        algo = cfg.get("algo", "ppol")
        assert algo in ALGOS
        prefix = "" if algo == "ppol" else f"{algo}-"
        assert name.startswith(prefix), f"{name}: a {algo} agent"
        check_mode(name.removeprefix(prefix))
        mode = cfg["robust"]["mode"]
        assert mode == name.removeprefix(prefix), f"{name}: its config says {mode}"


def test_table1_markers_live_in_docs_results_and_the_export_fills_them():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from table1_export import README_END, README_START, replace_between_markers
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    results = (ROOT / "docs" / "results.md").read_text()
    assert results.count(README_START) == 1 and results.count(README_END) == 1
    assert README_START not in README.read_text()
    updated = replace_between_markers(results, "| new |")
    # the body sits between the markers, replacing what was there; the rest is untouched
    before, inner, after = _split_at_markers(updated, README_START, README_END)
    assert inner == "\n| new |\n"
    assert (before, after) == _split_at_markers(results, README_START, README_END)[::2]


def _split_at_markers(text: str, start: str, end: str) -> tuple[str, str, str]:
    head, rest = text.split(start)
    inner, tail = rest.split(end)
    return head, inner, tail


def test_the_study_cost_quoted_in_the_readme_and_usage_is_the_committed_one():
    """README and docs/usage quote the compute model's totals; they follow
    ``benchmarks/results/compute/study_cost.md`` (regenerated when runs are added)."""
    totals = next(
        line
        for line in (ROOT / "benchmarks/results/compute/study_cost.md").read_text().splitlines()
        if line.startswith("Totals:")
    )
    fast, paper = re.findall(r"env steps, ([\d,]+) core-hours", totals)
    ppol_fast, ppol_paper = re.findall(r"PPOL runs alone: [^,]+, ([\d,]+) core-hours", totals)
    readme = " ".join(README.read_text().split())
    assert f"about {fast} core-hours with the `fast` preset and {paper} with `paper`" in readme
    usage = (ROOT / "docs/usage.md").read_text()
    assert re.search(rf"\| `fast` \|.*\*\*{fast}\*\*.*{ppol_fast} core-hours \|", usage)
    assert re.search(rf"\| `paper` \|.*\*\*{paper}\*\*.*{ppol_paper} core-hours \|", usage)
