"""``python -m rpa_lib.data validate``: see :mod:`rpa_lib.data.cli`."""

import sys

from rpa_lib.data.cli import main

if __name__ == "__main__":
    sys.exit(main())
