"""``python -m server``: run the server, as ``chemmy-server`` does (``server.process.main``)."""

import sys

from server.process.main import main

if __name__ == "__main__":
    sys.exit(main())
