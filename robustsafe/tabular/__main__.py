"""``python -m robustsafe.tabular``: run the worked example into runs/tabular and print it."""

from .demo import main

raise SystemExit(main())
