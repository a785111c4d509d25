"""Provenance: the git state of a package checkout, and a run's record of each start / resume."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_config import tiny_config

from robustsafe.provenance import code_version, cpu_kind, cpu_model, git_state
from robustsafe.train import train

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo, *args):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@needs_git
def test_git_state_names_the_commit_and_whether_the_package_files_differ(tmp_path):
    repo = tmp_path / "repo"
    pkg = repo / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    (repo / "README").write_text("r\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD")
    assert git_state(pkg) == (head, False)
    (repo / "README").write_text("changed outside the package\n")
    (pkg / "new_untracked.py").write_text("y = 2\n")
    assert git_state(pkg) == (head, False)  # neither changes the package's tracked files
    (pkg / "__init__.py").write_text("x = 2\n")
    assert git_state(pkg) == (head, True)
    elsewhere = repo / "venv" / "pkg"  # e.g. installed into a venv inside someone's repo
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("")
    assert git_state(elsewhere) == (None, None)
    assert git_state(tmp_path / "not-a-repo") == (None, None)


def test_code_version_records_the_versions_results_depend_on():
    info = code_version()
    import torch

    import robustsafe

    assert info["robustsafe"] == robustsafe.__version__
    assert info["torch"] == torch.__version__
    # numbers are reproducible per kind of processor: on Linux, the first model name the kernel
    # lists, read here directly
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = re.findall(r"^model name\s*:\s*(.+?)\s*$", cpuinfo.read_text(), re.M)
        assert names and info["cpu"] == names[0]
    else:
        assert info["cpu"] == cpu_model()
    # the commit and the modified flag are the checkout's own, read here by git directly
    assert (info["commit"], info["modified"]) == _checkout_state()


def _checkout_state():
    """(HEAD, whether the package's tracked files differ from it) of the checkout that holds
    the imported package, by git itself; (None, None) for an install git does not track."""
    import robustsafe

    pkg = Path(robustsafe.__file__).parent
    if shutil.which("git") is None:
        return None, None
    run = subprocess.run(
        ["git", "-C", str(pkg), "ls-files", "--error-unmatch", "__init__.py"], capture_output=True
    )
    if run.returncode != 0:
        return None, None
    head = _git(pkg, "rev-parse", "HEAD")
    status = _git(pkg, "status", "--porcelain", "--untracked-files=no", "--", ".")
    return head, bool(status)


def test_cpu_model_reads_the_first_model_name(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: X\nmodel name\t: Example CPU 9000 @ 2.0GHz\n\n"
        "processor\t: 1\nmodel name\t: Other\n"
    )
    assert cpu_model(cpuinfo) == "Example CPU 9000 @ 2.0GHz"
    cpuinfo.write_text("processor\t: 0\nmodel name\t:   \n")  # empty: fall back
    import platform

    assert cpu_model(cpuinfo) == (platform.processor() or None)
    assert cpu_model(tmp_path / "missing") == (platform.processor() or None)


def test_cpu_kind_tells_apart_processors_that_share_a_model_name(tmp_path):
    """Two virtual machines both named "AMD EPYC" trained the same run to other numbers: the
    kind names the family, model and stepping and the widest vector instructions."""
    cpuinfo = tmp_path / "cpuinfo"
    zen = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: {}\nmodel\t\t: {}\n"
    zen += "model name\t: AMD EPYC\nstepping\t: 1\nflags\t\t: fpu sse4_2 avx {}\n\n"
    zen += "processor\t: 1\nvendor_id\t: Other\ncpu family\t: 1\n"
    cpuinfo.write_text(zen.format(26, 2, "avx2 avx512f avx512bw"))
    assert cpu_kind(cpuinfo) == "AuthenticAMD family 26 model 2 stepping 1, avx512f"
    cpuinfo.write_text(zen.format(25, 1, "avx2"))
    assert cpu_kind(cpuinfo) == "AuthenticAMD family 25 model 1 stepping 1, avx2"
    assert cpu_model(cpuinfo) == "AMD EPYC"  # the same name for both
    arm = "processor\t: 0\nFeatures\t: fp asimd {}\nCPU implementer\t: 0x41\n"
    arm += "CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: {}\nCPU revision\t: 1\n"
    cpuinfo.write_text(arm.format("sve", "0xd40"))  # an ARM kernel names the part, not a family
    assert cpu_kind(cpuinfo) == "implementer 0x41 part 0xd40 variant 0x1 revision 1, sve"
    cpuinfo.write_text(arm.format("evtstrm", "0xd0c"))
    assert cpu_kind(cpuinfo) == "implementer 0x41 part 0xd0c variant 0x1 revision 1, asimd"
    # a byte that is not UTF-8 (a model name in another encoding) does not hide the rest
    cpuinfo.write_bytes(zen.format(26, 2, "avx2").replace("EPYC", "EPYC\xae").encode("latin-1"))
    assert cpu_kind(cpuinfo) == "AuthenticAMD family 26 model 2 stepping 1, avx2"
    cpuinfo.write_text("processor\t: 0\n")
    assert cpu_kind(cpuinfo) is None
    assert cpu_kind(tmp_path / "missing") is None
    assert code_version()["cpu_kind"] == cpu_kind()


@pytest.mark.filterwarnings("ignore:epoch 1 finished no episode")
def test_a_run_records_the_code_of_its_start_and_of_each_resume(tmp_path, toy_env_id):
    cfg = tiny_config(toy_env_id, epochs=3)
    run = tmp_path / "run"
    train(cfg, run, progress=False, stop_after_epoch=1)
    train(cfg, run, resume=True, progress=False, stop_after_epoch=2)
    train(cfg, run, resume=True, progress=False)
    starts = json.loads((run / "provenance.json").read_text())["starts"]
    assert [s["start_epoch"] for s in starts] == [0, 1, 2]
    commit, modified = _checkout_state()
    assert all((s["commit"], s["modified"]) == (commit, modified) for s in starts)
    # a fresh start in the same directory (--force) begins a new record
    train(cfg, run, progress=False, force=True)
    starts = json.loads((run / "provenance.json").read_text())["starts"]
    assert [s["start_epoch"] for s in starts] == [0]
