"""make_attacker: the accepted names, their properties, and clear errors for the rest."""

from __future__ import annotations

import pytest

from robustsafe.attacks import (
    ATTACKER_NAMES,
    CRITIC_ATTACK_DEFAULTS,
    MAD_DEFAULTS,
    AttackConfig,
    make_attacker,
)


@pytest.mark.parametrize(
    ("name", "needs_critics"),
    [
        ("none", False),
        ("random", False),
        ("mad", False),
        ("mc", True),
        ("mr", True),
        ("minr", True),
        ("mix:0.25", True),
        ("mix:1", True),
        ("mix:0", True),
    ],
)
def test_accepted_names(name, needs_critics):
    attacker = make_attacker(name)
    assert attacker.name == name
    assert attacker.needs_critics is needs_critics


def test_amad_needs_its_threshold():
    with pytest.raises(ValueError, match="amad_threshold"):
        make_attacker("amad")
    attacker = make_attacker("amad", threshold=0.3)
    assert attacker.name == "amad" and attacker.needs_critics and attacker.threshold == 0.3


@pytest.mark.parametrize(
    "bad", ["", "MC", " mc", "foo", "mix", "mix:", "mix:W", "mix:abc", "mad2", "mix:0.5x"]
)
def test_unknown_names_list_the_accepted_ones(bad):
    with pytest.raises(ValueError) as info:
        make_attacker(bad)
    message = str(info.value)
    assert repr(bad) in message
    for name in ATTACKER_NAMES:
        assert name in message


@pytest.mark.parametrize("bad", ["mix:1.5", "mix:-0.1", "mix:nan", "mix:inf"])
def test_mix_weight_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make_attacker(bad)


def test_non_string_name():
    with pytest.raises(ValueError, match="accepted names"):
        make_attacker(3)  # type: ignore[arg-type]


def test_settings_by_config_and_keywords():
    assert make_attacker("mc").config == CRITIC_ATTACK_DEFAULTS
    assert make_attacker("mad").config == MAD_DEFAULTS
    cfg = AttackConfig(steps=3, optimizer="adam")
    assert make_attacker("mr", cfg).config is cfg
    assert make_attacker("mr", cfg, steps=7).config.steps == 7
    assert make_attacker("mc", norm="l2").norm == "l2"
    assert make_attacker("random", norm="l2").norm == "l2"
    with pytest.raises(TypeError, match="unknown settings"):
        make_attacker("mc", stepz=3)
    with pytest.raises(TypeError, match="threshold"):
        make_attacker("mc", threshold=1.0)
    with pytest.raises(ValueError, match="optimizer"):
        make_attacker("mc", optimizer="sgd")
