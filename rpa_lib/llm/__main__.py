"""``python -m rpa_lib.llm mock [--port 8765] [--latency 0] [--answer MODULE:FUNCTION]``: run the mock OpenAI-compatible server."""

import sys

from rpa_lib.llm.mock_server import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "mock":
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args[1:]))
