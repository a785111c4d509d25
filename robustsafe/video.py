"""Videos of natural and attacked episodes side by side (``robustsafe evaluate --video DIR``).

For every attacker, the first ``episodes`` paired episodes (episode i of both sides starts from
the same reset seed, as in ``robustsafe.evaluate``) are played with the agent's deterministic
actions, once without attack and once under the attacker at ``epsilon``, through
``evaluate_agent`` itself on one in-process environment whose frames are recorded. Each video
frame is the natural frame (left) next to the attacked one (right), each labelled with the
episode's reward and cost so far in a strip under it; the side whose episode ended first holds
its last frame. One file per attacker, the episodes one after the other:
``DIR/natural-vs-<attack>-eps<eps>.mp4``
(H.264 through ``imageio-ffmpeg``, the ``video`` extra), or a GIF where that is not installed.

Frames come from Bullet-Safety-Gym's offscreen renderer: ``env.unwrapped.render(mode=
"rgb_array")`` (its ``gym.make(..., render_mode=...)`` raises TypeError); it works without a
display. Other environments are rendered with gymnasium's ``render()`` if they were made with
``render_mode="rgb_array"``; pass ``render`` to use anything else. AMAD's threshold comes from
the natural episodes of the video, not those of the evaluation.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robustsafe.envs import SafeEnv, VectorEnv

FRAME_SIZE = (320, 240)  # width, height of each side (Bullet's camera; even, for H.264)


def bullet_render(env: SafeEnv) -> np.ndarray:
    """An RGB frame (height, width, 3) of a Bullet-Safety-Gym env, offscreen."""
    base = env.env.unwrapped
    camera = getattr(getattr(base, "world", None), "camera", None)
    if camera is not None:
        camera.render_width, camera.render_height = FRAME_SIZE
    name = env.env.spec.id if env.env.spec is not None else type(base).__name__
    try:
        try:
            frame = base.render(mode="rgb_array")
        except TypeError:  # a gymnasium env: render() takes no mode
            frame = base.render()
    except NotImplementedError:
        frame = None
    if frame is None or np.asarray(frame).ndim != 3:
        raise ValueError(f"{name} renders no RGB frame")
    return np.ascontiguousarray(np.asarray(frame, dtype=np.uint8)[:, :, :3])


def check_renders(
    env_id: str,
    env_kwargs: dict | None = None,
    render: Callable[[SafeEnv], np.ndarray] = bullet_render,
) -> None:
    """ValueError naming ``env_id`` if it renders no RGB frame after a reset: checked before
    any evaluation episode runs, so that a video the env cannot give wastes no evaluation."""
    vec = VectorEnv(env_id, 1, seed=0, workers=0, env_kwargs=env_kwargs)
    try:
        env = vec.local_envs[0]
        env.reset(0)
        render(env)
    finally:
        vec.close()


@dataclass
class Episode:
    """One recorded episode: frames and the reward and cost summed up to each frame."""

    frames: list[np.ndarray]
    reward: list[float]
    cost: list[float]


class _Recorder:
    """Records every reset and step of one in-process environment."""

    def __init__(self, env: SafeEnv, render: Callable[[SafeEnv], np.ndarray]) -> None:
        self.episodes: list[Episode] = []
        step, reset = env.step, env.reset

        def recording_reset(seed: int | None = None) -> np.ndarray:
            obs = reset(seed)
            self.episodes.append(Episode([render(env)], [0.0], [0.0]))
            return obs

        def recording_step(action: np.ndarray) -> Any:
            out = step(action)
            ep = self.episodes[-1]
            ep.frames.append(render(env))
            ep.reward.append(ep.reward[-1] + out[1])
            ep.cost.append(ep.cost[-1] + out[2])
            return out

        env.reset = recording_reset  # type: ignore[method-assign]
        env.step = recording_step  # type: ignore[method-assign]

    def played(self) -> list[Episode]:
        """The episodes that took a step (not the restarts after a run's last episode)."""
        return [e for e in self.episodes if len(e.frames) > 1]


@functools.lru_cache(maxsize=1)
def _font() -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=13)  # Pillow >= 10.1 with FreeType
    except (TypeError, ImportError, OSError):
        return ImageFont.load_default()


LABEL_HEIGHT = 48  # the strip under each picture with its labels (even, for H.264)


def _label(frame: np.ndarray, title: str, reward: float, cost: float, hit: bool) -> np.ndarray:
    """The picture with a strip under it: the run's name, reward and cost so far (red once
    there is a cost); a red border on a step with a cost."""
    from PIL import Image, ImageDraw

    h, w = frame.shape[:2]
    img = Image.new("RGB", (w, h + LABEL_HEIGHT), (255, 255, 255))
    img.paste(Image.fromarray(frame), (0, 0))
    draw = ImageDraw.Draw(img)
    color = (200, 0, 0) if cost > 0 else (0, 0, 0)
    draw.text((5, h + 3), title, fill=(0, 0, 0), font=_font())
    draw.text((5, h + 24), f"reward {reward:.1f}   cost {cost:.0f}", fill=color, font=_font())
    if hit:
        draw.rectangle((0, 0, w - 1, h - 1), outline=(255, 0, 0), width=4)
    return np.asarray(img)


def side_by_side(natural: Episode, attacked: Episode, title: str) -> list[np.ndarray]:
    """The frames of one paired episode: natural left, attacked right, labelled."""
    n = max(len(natural.frames), len(attacked.frames))
    out = []
    for t in range(n):
        sides = []
        for ep, name in ((natural, "natural"), (attacked, title)):
            k = min(t, len(ep.frames) - 1)
            hit = k > 0 and ep.cost[k] > ep.cost[k - 1]
            sides.append(_label(ep.frames[k], name, ep.reward[k], ep.cost[k], hit))
        out.append(np.concatenate(sides, axis=1))
    return out


def write_video(frames: Sequence[np.ndarray], path: Path, fps: int) -> Path:
    """MP4 with imageio-ffmpeg if installed, else a GIF next to ``path``; returns the path.
    Written to a temporary file beside it, then renamed: a kill leaves the earlier video."""
    import imageio.v2 as imageio

    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        path = path.with_suffix(".gif")
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")  # the suffix picks the format
    try:
        if path.suffix == ".gif":
            # Pillow merges identical consecutive GIF frames (a held frame would vanish): a
            # parity bit in one corner pixel keeps one GIF frame per step.
            marked = []
            for i, f in enumerate(frames):
                f = np.array(f, copy=True)
                f[-1, -1, 0] = (int(f[-1, -1, 0]) & 0xFE) | (i & 1)
                marked.append(f)
            imageio.mimsave(tmp, marked, duration=1000 / fps, loop=0)
        else:
            with imageio.get_writer(tmp, fps=fps, codec="libx264", macro_block_size=1) as w:
                for f in frames:
                    w.append_data(f)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _stem(name: str, epsilon: float) -> str:
    return f"natural-vs-{name.replace(':', '')}-eps{epsilon:g}"


def check_video_request(
    attacks: Sequence[str],
    epsilon: float,
    out_dir: str | Path,
    episodes: int = 1,
    fps: int = 30,
) -> list[str]:
    """The attackers a video request records (``none`` dropped, each once), checked before any
    episode runs: ValueError if there is none, ``epsilon`` or ``episodes`` or ``fps`` is not
    positive, or ``out_dir`` is a file. Videos of the same names are replaced (derived files:
    docs/guarantees.md)."""
    attackers = [a for a in dict.fromkeys(attacks) if a != "none"]
    if not attackers:
        raise ValueError("a video needs an attacker (--attacks), not only 'none'")
    if not epsilon > 0:
        raise ValueError(f"a video needs an epsilon > 0, got {epsilon}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if fps < 1:
        raise ValueError(f"the frame rate must be >= 1 frame per second, got {fps}")
    if not str(out_dir):
        raise ValueError("the video folder is empty: name one (--video DIR)")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file, not a directory")
    try:  # made now, so that a path that cannot be written fails before the episodes
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as err:
        raise ValueError(f"cannot write videos in {out}: {err.strerror or err}") from None
    return attackers


def record_videos(
    agent: Any,
    env_id: str,
    attacks: Sequence[str],
    epsilon: float,
    out_dir: str | Path,
    episodes: int = 1,
    seed: int = 0,
    attack_seed: int = 0,
    attack_space: str = "raw",
    xi: float = 0.1,
    fps: int = 30,
    env_kwargs: dict | None = None,
    render: Callable[[SafeEnv], np.ndarray] = bullet_render,
) -> list[Path]:
    """One video per attacker (``none`` skipped) of the first ``episodes`` paired episodes;
    returns the paths. ValueError from ``check_video_request`` before any episode runs."""
    from robustsafe.evaluate import evaluate_agent

    attackers = check_video_request(attacks, epsilon, out_dir, episodes, fps)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vec = VectorEnv(env_id, 1, seed=seed, workers=0, env_kwargs=env_kwargs)
    try:
        recorder = _Recorder(vec.local_envs[0], render)
        evaluate_agent(
            agent,
            vec,
            episodes=episodes,
            seed=seed,
            attacks=["none", *attackers],
            epsilons=[epsilon],
            attack_seed=attack_seed,
            attack_space=attack_space,
            xi=xi,
        )
    finally:
        vec.close()
    played = recorder.played()
    if len(played) != episodes * (1 + len(attackers)):
        raise RuntimeError(f"recorded {len(played)} episodes, expected {episodes} per run")
    natural = played[:episodes]
    paths = []
    for j, name in enumerate(attackers):
        attacked = played[episodes * (j + 1) : episodes * (j + 2)]
        title = f"{_attack_title(name)} eps {epsilon:g}"
        frames = [
            f for n, a in zip(natural, attacked, strict=True) for f in side_by_side(n, a, title)
        ]
        paths.append(write_video(frames, out / f"{_stem(name, epsilon)}.mp4", fps))
    return paths


def _attack_title(name: str) -> str:
    from robustsafe.experiments.names import attack_name

    return attack_name(name)
