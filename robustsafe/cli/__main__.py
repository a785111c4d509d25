"""``python -m robustsafe.cli``."""

import sys

from robustsafe.cli import main

sys.exit(main())
