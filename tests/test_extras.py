"""The install's extras: Ray stays optional for users (``pip install robustsafe`` does not pull
it), while the ``test`` extra brings it, pinned, so that the suite that CI runs includes the grid
on a simulated multi-node Ray cluster (tests/experiments/test_grid_ray.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower()


def test_ray_is_an_optional_extra_that_the_test_extra_includes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert "ray" not in {_name(r) for r in project["dependencies"]}
    assert "ray" in {_name(r) for r in extras["ray"]}
    assert set(extras["ray"]) <= set(extras["test"])  # the same requirement, word for word


def test_constraints_pin_ray_and_what_it_needs():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, _, version = line.strip().partition("==")
        if name and not name.startswith("#"):
            assert version, f"constraints.txt pins exact versions: {line!r}"
            pins[name.lower()] = version
    # ray 2.x's own requirements (the ones that torch and the rest do not already bring)
    for name in ("ray", "click", "jsonschema", "msgpack", "requests"):
        assert name in pins, name
