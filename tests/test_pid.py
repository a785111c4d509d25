import pytest

from robustsafe.pid import PIDConfig, PIDLagrangian, PIDState, pid_step


def test_pid_matches_hand_computation():
    cfg = PIDConfig(kp=0.1, ki=0.003, kd=0.001, cost_limit=5.0)
    pid = PIDLagrangian(cfg)
    # epoch 1: J=15 -> e=10, I=10, D=max(0, 10-0)=10 -> 1 + 0.03 + 0.01 = 1.04
    assert pid.update(15.0) == pytest.approx(1.04)
    # epoch 2: J=9 -> e=4, I=14, D=max(0, 4-10)=0 -> 0.4 + 0.042 = 0.442
    assert pid.update(9.0) == pytest.approx(0.442)
    # epoch 3: J=0 -> e=-5, I=9, D=0, P uses max(0, e)=0 -> 0.027
    assert pid.update(0.0) == pytest.approx(0.027)
    # epoch 4: J=0 -> I=max(0, 9-5)=4 -> 0.012 ; epoch 5: I=0 -> 0
    assert pid.update(0.0) == pytest.approx(0.012)
    assert pid.update(0.0) == pytest.approx(0.0)
    # epoch 6: J=7 -> e=2, I=2, D = 7 - 0 = 7 -> 0.2 + 0.006 + 0.007
    assert pid.update(7.0) == pytest.approx(0.213)


def test_pid_p_term_on_the_error_itself_is_stookes():
    """p_on_excess=False: Stooke et al.'s KP * e, which pulls lambda down under the limit."""
    cfg = PIDConfig(kp=0.1, ki=0.1, kd=0.0, cost_limit=5.0)
    state = PIDState(integral=10.0)
    # the authors' code: e = -5, I = 5 -> 0.1 * 0 + 0.1 * 5 = 0.5
    assert pid_step(state, 0.0, cfg).multiplier == pytest.approx(0.5)
    # Stooke's: 0.1 * (-5) + 0.5 = 0
    stooke = PIDConfig(kp=0.1, ki=0.1, kd=0.0, cost_limit=5.0, p_on_excess=False)
    assert pid_step(state, 0.0, stooke).multiplier == pytest.approx(0.0)
    # J = 3: e = -2, I = 8 -> 0.8 - 0.2 = 0.6 (the code's: 0.8); above the limit both agree
    assert pid_step(state, 3.0, stooke).multiplier == pytest.approx(0.6)
    assert pid_step(state, 3.0, cfg).multiplier == pytest.approx(0.8)
    assert pid_step(state, 9.0, stooke).multiplier == pid_step(state, 9.0, cfg).multiplier


def test_pid_smoothing_and_delay():
    cfg = PIDConfig(kp=1.0, ki=0.0, kd=1.0, cost_limit=0.0, p_ema=0.5, d_ema=0.5, d_delay=2)
    s = pid_step(PIDState(), 4.0, cfg)
    # first update: smoothed error 4, smoothed cost 4; not enough history for delay 2 -> D vs
    # the limit 0 = 4: lambda = 4 + 4 = 8
    assert s.multiplier == pytest.approx(8.0)
    s = pid_step(s, 0.0, cfg)
    # error ema 0.5*4 + 0.5*0 = 2 ; cost ema 0.5*4 + 0 = 2 ; history (4, 2), still < delay+1
    # -> D = max(0, 2 - 0) = 2 ; lambda = 2 + 2 = 4
    assert s.multiplier == pytest.approx(4.0)
    s = pid_step(s, 8.0, cfg)
    # error ema 0.5*2 + 4 = 5 ; cost ema 0.5*2 + 4 = 5 ; history (4, 2, 5): D = 5 - 4 = 1
    assert s.multiplier == pytest.approx(6.0)


def test_pid_fall_ema_smooths_only_the_fall():
    # kp 1, nothing else, limit 0: the unsmoothed multiplier is the epoch's cost.
    cfg = PIDConfig(kp=1.0, ki=0.0, kd=0.0, cost_limit=0.0, fall_ema=0.75)
    pid = PIDLagrangian(cfg)
    assert pid.update(8.0) == pytest.approx(8.0)  # rise: at once
    assert pid.update(0.0) == pytest.approx(6.0)  # fall: 0.75 * 8 + 0.25 * 0
    assert pid.update(4.0) == pytest.approx(5.5)  # still falling: 0.75 * 6 + 0.25 * 4
    assert pid.update(12.0) == pytest.approx(12.0)  # rise above the smoothed value: at once
    # the same costs without fall_ema follow the cost exactly
    plain = PIDLagrangian(PIDConfig(kp=1.0, ki=0.0, kd=0.0, cost_limit=0.0))
    assert [plain.update(c) for c in (8.0, 0.0, 4.0)] == pytest.approx([8.0, 0.0, 4.0])


def test_pid_cap():
    pid = PIDLagrangian(PIDConfig(lambda_max=0.5))
    assert pid.update(100.0) == 0.5  # uncapped: 9.5 + 0.285 + 0.095


def test_pid_cap_does_not_wind_up_the_integral():
    # I only (KI 0.1, limit 5, cap 1): two epochs at cost 25 would make I = 40 (lambda 4, capped
    # at 1); clamped at 1 / 0.1 = 10, one safe epoch at cost 0 (e = -5) brings I to 5 and lambda
    # to 0.5. A wound-up integral (35) would hold lambda at the cap for six more safe epochs.
    pid = PIDLagrangian(PIDConfig(kp=0.0, ki=0.1, kd=0.0, lambda_max=1.0))
    assert [pid.update(c) for c in (25.0, 25.0)] == pytest.approx([1.0, 1.0])
    assert pid.state.integral == pytest.approx(10.0)
    assert pid.update(0.0) == pytest.approx(0.5)
    assert pid.update(0.0) == pytest.approx(0.0)


def test_pid_state_round_trip():
    # The restored controller must continue with the saved integral and previous error (the
    # second epoch of test_pid_matches_hand_computation, 0.442); a fresh one would give
    # e=4, I=4, D=4 -> 0.4 + 0.012 + 0.004 = 0.416.
    pid = PIDLagrangian(PIDConfig())
    assert pid.update(15.0) == pytest.approx(1.04)
    other = PIDLagrangian(PIDConfig())
    other.load_state_dict(pid.state_dict())
    assert other.multiplier == pytest.approx(1.04)
    assert other.update(9.0) == pytest.approx(0.442)


def test_pid_state_round_trip_keeps_the_smoothed_error():
    # P on an exponential average of the error (p_ema 0.5): the first update's error, 8, is the
    # average; after a save and load, an error of 0 averages to 0.5 * 8 + 0.5 * 0 = 4 (a
    # controller that lost the average would start again from 0).
    cfg = PIDConfig(kp=1.0, ki=0.0, kd=0.0, cost_limit=0.0, p_ema=0.5)
    pid = PIDLagrangian(cfg)
    assert pid.update(8.0) == pytest.approx(8.0)
    other = PIDLagrangian(cfg)
    other.load_state_dict(pid.state_dict())
    assert other.update(0.0) == pytest.approx(4.0)


@pytest.mark.parametrize(
    "bad",
    [
        dict(kp=-1.0),
        dict(p_ema=1.0),
        dict(d_delay=0),
        dict(fall_ema=1.0),
        dict(lambda_max=-1.0),
        dict(lambda_max=float("nan")),
    ],
)
def test_pid_rejects_bad_settings(bad):
    with pytest.raises(ValueError):
        PIDConfig(**bad)
