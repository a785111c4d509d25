"""make_attacker: the accepted names, their properties, and clear errors for the rest; users'
own attackers (register_attacker)."""

from __future__ import annotations

import pytest
import torch

from robustsafe.attacks import (
    ATTACKER_NAMES,
    CRITIC_ATTACK_DEFAULTS,
    MAD_DEFAULTS,
    AttackConfig,
    Attacker,
    NoAttacker,
    make_attacker,
    register_attacker,
    registered_attackers,
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


# ----------------------------------------------------------------------------- your own attackers


@pytest.fixture
def registry(monkeypatch):
    """An empty registry of users' attackers for the test (the module's is process-wide)."""
    from robustsafe.attacks import registry as module

    monkeypatch.setattr(module, "_registered", {})
    return module


class _Shift(Attacker):
    """u = epsilon in every coordinate."""

    def perturbation(self, actor, critics, obs, epsilon, generator, scale):
        return torch.full_like(obs, epsilon)


def test_a_registered_attacker_is_built_by_name_and_recorded_under_it(registry):
    register_attacker("shift", _Shift)
    assert registered_attackers() == ("shift",)
    attacker = make_attacker("shift")
    assert isinstance(attacker, _Shift) and attacker.name == "shift"
    obs = torch.zeros(3, 4)
    out = attacker(None, None, obs, 0.1, torch.Generator())
    assert torch.allclose(out, torch.full((3, 4), 0.1))
    with pytest.raises(TypeError, match="its factory's"):
        make_attacker("shift", steps=3)  # the built-ins' settings are not a registered one's


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mc", "paper's attackers"),
        ("mix:0.5", "lower-case"),
        ("mix", "paper's attackers"),
        ("Shift", "lower-case"),
        ("a,b", "lower-case"),
        ("", "lower-case"),
        (3, "lower-case"),
    ],
)
def test_a_name_that_would_be_ambiguous_is_refused(registry, name, words):
    with pytest.raises(ValueError, match=words):
        register_attacker(name, _Shift)
    assert registered_attackers() == ()


def test_a_name_is_registered_once_unless_replaced(registry):
    register_attacker("shift", _Shift)
    with pytest.raises(ValueError, match="registered already"):
        register_attacker("shift", NoAttacker)
    register_attacker("shift", NoAttacker, replace=True)
    assert isinstance(make_attacker("shift"), NoAttacker)


def test_a_factory_that_fails_or_returns_no_attacker_is_a_clear_error(registry):
    register_attacker("broken", lambda: 1 / 0)
    register_attacker("wrong", lambda: "mc")
    with pytest.raises(ValueError, match="broken.*ZeroDivisionError"):
        make_attacker("broken")
    with pytest.raises(TypeError, match="not an Attacker"):
        make_attacker("wrong")
    with pytest.raises(ValueError, match="registered: broken, wrong"):
        make_attacker("nosuch")


def test_a_factory_is_registered_not_an_attacker_and_a_shared_one_keeps_its_name(registry):
    with pytest.raises(TypeError, match="not an attacker"):
        register_attacker("inst", NoAttacker())
    shared = _Shift()
    register_attacker("mixup", lambda: shared)  # "mix" alone is reserved, not every mix...
    register_attacker("other", lambda: shared)
    assert make_attacker("mixup").name == "mixup" and make_attacker("other").name == "other"
    assert shared.name == ""  # the factory's own instance is left as it was
