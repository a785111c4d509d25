"""Experiment drivers: the (env x mode x seed) grid runner and the paper's results table.

- ``robustsafe.experiments.grid``: ``GridSpec``, ``plan_grid``, ``run_grid`` (train every
  combination in its own process, resume or skip finished ones, evaluate every agent).
- ``robustsafe.experiments.table``: ``collect_table`` (the paper's Table 1 from the
  ``eval.json`` files of a directory tree, read by ``robustsafe.experiments.eval_files``, its rows
  named and ordered by ``robustsafe.experiments.names``), and
  ``robustsafe.experiments.table_format``: ``format_markdown``, ``write_tables``.
- ``robustsafe.experiments.appendix``: ``write_appendix`` (every appendix file: the
  Random/MAD/Average table, the other learners' tables, and those of the modules below), with
  ``robustsafe.experiments.appendix_runs`` (the runs the minr and mix tables read),
  ``robustsafe.experiments.minr_table`` (the minimum-reward table),
  ``robustsafe.experiments.mix_table`` (the MC/MR mixture table),
  ``robustsafe.experiments.xi_sweep`` (AMAD over xi) and ``robustsafe.experiments.figures``
  (its figure against MAD, and the mixture figure).

The submodules are imported on demand (``from robustsafe.experiments.grid import run_grid``),
so importing this package costs nothing.
"""
