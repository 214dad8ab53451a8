"""``python -m hostsim`` is the ``hostsim`` command."""

import sys

from .cli import main

sys.exit(main())
