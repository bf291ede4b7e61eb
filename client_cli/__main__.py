"""``python -m client_cli``: the same as the ``chemmy`` command."""

from __future__ import annotations

import sys

from client_cli.main import main

sys.exit(main())
