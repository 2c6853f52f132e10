"""``python -m rpa_lib.authoring COMMAND``: see :mod:`rpa_lib.authoring.cli`."""

import sys

from rpa_lib.authoring.cli import main

if __name__ == "__main__":
    sys.exit(main())
