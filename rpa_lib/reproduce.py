"""``python -m rpa_lib.reproduce``: the command line of :mod:`rpa_lib.run.reproduce`; importing this module gives
that module itself (one module object, so patching either name patches both)."""

import sys

from rpa_lib.run import reproduce as _reproduce

if __name__ == "__main__":
    sys.exit(_reproduce.main())
else:
    sys.modules[__name__] = _reproduce
