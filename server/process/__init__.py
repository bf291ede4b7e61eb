"""The process: its settings (``config``), who may connect (``auth``), its counters
(``metrics``), the one place it is put together (``assemble``) and the command that
runs it (``main``: ``chemmy-server``, ``python -m server``).

``config``, ``auth`` and ``metrics`` import no other room; ``assemble`` and ``main``
import them all and are imported by none (but the test kit).
"""
