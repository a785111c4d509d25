"""Where an attack's random numbers come from: one generator for the batch, or one per row.

An attacker accepts either

- a ``torch.Generator``: every draw of the call comes from it, batch-wide (simple, and what
  training uses); a row's draws then depend on which rows share its batch; or
- a ``RowGenerators``: one ``torch.Generator`` per row, and every random number a row uses (its
  random starts, its Langevin noise, its uniform noise) comes from its own generator, in an
  order that depends on that row only. A row's result is then the same whatever other rows
  share the batch. Evaluation gives every episode its own stream this way
  (``episode_generator``), which is what makes per-episode numbers independent of
  ``--num-envs`` and ``--workers``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


class RowGenerators:
    """One ``torch.Generator`` per row of a batch; row ``i`` draws only from ``generators[i]``.

    The generators are shared, not copied: drawing advances them, so a per-episode generator
    carries its stream from one call to the next.
    """

    def __init__(self, generators: Sequence[torch.Generator]) -> None:
        gens = list(generators)
        for g in gens:
            if not isinstance(g, torch.Generator):
                raise TypeError(f"RowGenerators holds torch.Generator objects, got {type(g)}")
        self.generators = gens

    @classmethod
    def from_seeds(cls, seeds: Sequence[int]) -> RowGenerators:
        return cls([torch.Generator().manual_seed(int(s)) for s in seeds])

    def __len__(self) -> int:
        return len(self.generators)

    def __repr__(self) -> str:
        return f"RowGenerators({len(self)} rows)"

    def select(self, rows: Tensor) -> RowGenerators:
        """The generators of ``rows`` (a boolean mask or an index tensor), in row order."""
        if rows.dtype == torch.bool:
            rows = torch.nonzero(rows, as_tuple=False).flatten()
        return RowGenerators([self.generators[int(i)] for i in rows.tolist()])

    def tile(self, times: int) -> RowGenerators:
        """Generators for ``times`` stacked copies of the batch (row ``k * n + i`` uses row i's).

        Drawing row by row in index order, each generator serves copy 0, then copy 1, ...: its
        order depends only on its own row.
        """
        return RowGenerators(self.generators * times)


RNG = torch.Generator | RowGenerators


ATTACK_TAG = 0xA77AC


def episode_generator(seed: int, episode: int, tag: int = ATTACK_TAG) -> torch.Generator:
    """The attack random stream of episode ``episode`` of an evaluation with attack seed ``seed``
    (another ``tag``: another family of per-episode streams, e.g. action noise).

    Derived with ``numpy.random.SeedSequence([seed, tag], spawn_key=(episode,))``.
    """
    state = np.random.SeedSequence([int(seed), int(tag)], spawn_key=(int(episode),))
    return torch.Generator().manual_seed(int(state.generate_state(1, dtype=np.uint64)[0]))


def select_rows(rng: RNG, rows: Tensor) -> RNG:
    """``rng`` restricted to ``rows``: a batch-wide generator is returned unchanged."""
    return rng.select(rows) if isinstance(rng, RowGenerators) else rng


def tile_rows(rng: RNG, times: int) -> RNG:
    """``rng`` for ``times`` stacked copies of the batch (see ``RowGenerators.tile``)."""
    return rng.tile(times) if isinstance(rng, RowGenerators) else rng


def _draw(fn, shape, rng: RNG, dtype, device) -> Tensor:
    if isinstance(rng, torch.Generator):
        return fn(tuple(shape), generator=rng, dtype=dtype, device=device)
    n, *rest = shape
    if n != len(rng):
        raise ValueError(f"{len(rng)} row generators for a batch of {n} rows")
    if n == 0:
        return torch.empty(tuple(shape), dtype=dtype, device=device)
    return torch.stack(
        [fn(tuple(rest), generator=g, dtype=dtype, device=device) for g in rng.generators]
    )


def rand(shape, rng: RNG, dtype=torch.float32, device="cpu") -> Tensor:
    """Uniform [0, 1) draws of ``shape`` (rows first), from ``rng`` as the module explains."""
    return _draw(torch.rand, shape, rng, dtype, device)


def randn(shape, rng: RNG, dtype=torch.float32, device="cpu") -> Tensor:
    """Standard normal draws of ``shape`` (rows first), from ``rng`` as the module explains."""
    return _draw(torch.randn, shape, rng, dtype, device)
