"""Examples an operator can read and run beside Chemmy; not part of the installed server."""
