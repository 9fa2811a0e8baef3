"""``python -m synthzoo``: the command line, as the installed ``synthzoo`` script runs it."""

import sys

from .cli import main

sys.exit(main())
