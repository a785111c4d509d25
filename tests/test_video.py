"""``robustsafe evaluate --video``: side-by-side videos with the expected frames, read back."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_evaluate_attacks import toy_agent_dir  # noqa: F401  (the fixture)
from tiny_config import optional_module

from robustsafe.agent import load_agent
from robustsafe.cli import main
from robustsafe.video import LABEL_HEIGHT, Episode, record_videos, side_by_side

imageio = optional_module("imageio.v2", "video")


def count_frames(path) -> int:
    if path.suffix == ".gif":
        return len(imageio.mimread(path))
    return imageio.get_reader(path).count_frames()


def toy_renderer(frames_per_run: int):
    """120 x 200 pictures of the toy walk: a bright column at the walker's position, and in the
    bottom-right corner a block whose brightness says which run drew it (0: natural, then 80
    per attacker), to check which side of the video shows which run."""
    calls = [0]

    def render(env) -> np.ndarray:
        frame = np.zeros((120, 200, 3), np.uint8)
        x = float(env.env.unwrapped.x)
        frame[60:, int(np.clip((x + 2) / 4 * 159, 0, 159)), :] = 255
        frame[96:, 176:, 2] = 80 * (calls[0] // frames_per_run)
        calls[0] += 1
        return frame

    return render


def test_side_by_side_holds_the_shorter_episode_and_marks_costs():
    a = Episode([np.zeros((8, 10, 3), np.uint8)] * 3, [0, 1, 2], [0, 0, 0])
    b = Episode([np.full((8, 10, 3), 9, np.uint8)] * 5, [0, 1, 2, 3, 4], [0, 1, 1, 2, 2])
    frames = side_by_side(a, b, "MR eps 0.05")
    assert len(frames) == 5
    assert all(f.shape == (8 + LABEL_HEIGHT, 20, 3) for f in frames)
    # the natural episode (3 frames) is held at its last frame; the attacked one goes on
    assert (frames[4][:8, :10] == 0).all() and (frames[4][:8, 10:] == 9).all()
    # a red border on the steps whose cost rises (attacked steps 1 and 3), none on the others
    red = [tuple(f[0, 10]) == (255, 0, 0) for f in frames]
    assert red == [False, True, False, True, False]
    assert not any(tuple(f[0, 0]) == (255, 0, 0) for f in frames)  # natural: no cost


def test_video_frames_pair_natural_and_attacked(toy_agent_dir, toy_env_id, tmp_path):  # noqa: F811
    agent = load_agent(toy_agent_dir)
    # per run: 2 episodes of 20 steps (the toy env's limit) and the restart after the last one
    render = toy_renderer(2 * 21 + 1)
    paths = record_videos(
        agent,
        toy_env_id,
        ["none", "mc", "random"],
        0.2,
        tmp_path / "v",
        episodes=2,
        render=render,
        fps=10,
    )
    assert [p.stem for p in paths] == ["natural-vs-mc-eps0.2", "natural-vs-random-eps0.2"]
    for run, p in enumerate(paths, start=1):
        # the start and the 20 steps of each episode
        assert count_frames(p) == 2 * 21
        if p.suffix == ".gif":
            frames = imageio.mimread(p)
        else:
            reader = imageio.get_reader(p)
            frames = [reader.get_data(t) for t in range(2 * 21)]
        for t in (0, 20, 21, 41):
            frame = frames[t]
            assert frame.shape[:2] == (120 + LABEL_HEIGHT, 400)  # natural | attacked
            # natural on the left, this attacker's run on the right
            assert abs(int(frame[110, 190, 2]) - 0) < 20
            assert abs(int(frame[110, 390, 2]) - 80 * run) < 20
        # paired starts: the walker's column is at the same place on both sides
        for t in (0, 21):
            left, right = frames[t][100, :200, 0], frames[t][100, 200:, 0]
            assert abs(int(np.argmax(left[:160])) - int(np.argmax(right[:160]))) <= 1
    with pytest.raises(ValueError, match="needs an attacker"):
        record_videos(agent, toy_env_id, ["none"], 0.2, tmp_path / "w", render=render)


def test_video_of_a_foreign_policy(toy_env_id, tmp_path):
    """A policy that is not a RobustSafe agent (here a torch module; the same path serves
    --policy and --sb3) is recorded as an agent is: natural | attacked, from paired starts."""
    import torch
    from torch import nn

    from robustsafe.evaluate import policy_as_agent

    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Tanh())
    render = toy_renderer(21 + 1)
    agent = policy_as_agent(module)
    (path,) = record_videos(agent, toy_env_id, ["none", "random"], 0.5, tmp_path, render=render)
    assert path.stem == "natural-vs-random-eps0.5" and count_frames(path) == 21
    if path.suffix == ".gif":
        frames = imageio.mimread(path)
    else:
        reader = imageio.get_reader(path)
        frames = [reader.get_data(t) for t in range(21)]
    assert abs(int(frames[0][110, 190, 2])) < 20 and abs(int(frames[0][110, 390, 2]) - 80) < 20
    left, right = frames[0][100, :200, 0], frames[0][100, 200:, 0]
    assert abs(int(np.argmax(left[:160])) - int(np.argmax(right[:160]))) <= 1


def test_cli_video_checks_before_evaluating(toy_agent_dir, tmp_path, capsys):  # noqa: F811
    base = ["evaluate", "--run", str(toy_agent_dir), "--env-workers", "0", "--episodes", "1"]
    assert main([*base, "--attacks", "none", "--video", str(tmp_path / "v")]) == 2
    assert "--video: a video needs an attacker" in capsys.readouterr().err
    args = [*base, "--attacks", "none,mc", "--eps", "0.1", "--no-progress"]
    video = ["--video", str(tmp_path / "v")]
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    for extra, words in [
        ([*video, "--video-fps", "0"], "the frame rate must be >= 1 frame per second, got 0"),
        (["--video", str(notes)], f"{notes} is a file, not a directory"),
        (["--video", str(notes / "sub")], f"cannot write videos in {notes / 'sub'}"),
        (["--video", ""], "the video folder is empty"),
    ]:
        assert main([*args, *extra]) == 2
        printed = capsys.readouterr()
        assert f"--video: {words}" in printed.err
        assert "reward" not in printed.out  # refused before evaluating (no table printed)
    assert notes.read_text() == "mine"
    # the toy env draws no picture: said before any episode runs, no table, no --out file
    out = tmp_path / "eval.json"
    assert main([*args, *video, "--out", str(out)]) == 2
    printed = capsys.readouterr()
    assert "--video: " in printed.err and "renders no RGB frame" in printed.err
    assert "reward" not in printed.out and not out.exists()


@pytest.mark.slow
def test_bullet_video_of_the_zoo_agent(tmp_path):
    from pathlib import Path

    from robustsafe.envs import make
    from robustsafe.video import bullet_render

    env = make("SafetyCarRun-v0")
    try:
        env.reset(0)
        frame = bullet_render(env)
    except Exception as err:  # no offscreen renderer here; under CI (``CI`` set) a failure
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Bullet renderer: {err}")
    finally:
        env.close()
    assert frame.shape == (240, 320, 3) and frame.std() > 0
    run = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla"
    out = tmp_path / "v"
    args = ["evaluate", "--run", str(run), "--env-workers", "0", "--episodes", "1", "--no-progress"]
    assert main([*args, "--attacks", "none,mr", "--eps", "0.05", "--video", str(out)]) == 0
    (path,) = sorted(out.iterdir())
    assert count_frames(path) == 201  # the start and 200 steps
    reader = __import__("imageio.v2").v2.get_reader(path)
    assert reader.get_data(0).shape == (240 + LABEL_HEIGHT, 640, 3)


def test_gif_without_imageio_ffmpeg(tmp_path, monkeypatch):
    import sys

    from robustsafe.video import write_video

    frames = [np.full((16, 24, 3), 40 * k, np.uint8) for k in range(5)]
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails: not installed
    path = write_video(frames, tmp_path / "v.mp4", fps=10)
    assert path == tmp_path / "v.gif" and count_frames(path) == 5


def test_a_video_write_that_fails_keeps_the_earlier_video(tmp_path, monkeypatch):
    """The video goes to a temporary file renamed at the end: a write stopped half-way (a
    kill, a full disk) leaves the video of the last run whole, and no temporary file."""
    import sys

    import imageio.v2 as imageio

    from robustsafe.video import write_video

    frames = [np.full((16, 24, 3), 40 * k, np.uint8) for k in range(5)]
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    path = write_video(frames, tmp_path / "v.mp4", fps=10)
    before = path.read_bytes()

    def stopped(target, *args, **kwargs):
        open(target, "wb").write(b"half a GIF")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(imageio, "mimsave", stopped)
    with pytest.raises(OSError):
        write_video(frames[::-1], tmp_path / "v.mp4", fps=10)
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]
