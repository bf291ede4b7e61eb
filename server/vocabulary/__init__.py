"""The table's vocabulary: the words a table is defined, told and answered in.

- :mod:`.options`: what a table is (every setting of GAME_RULES with its default, and
  the one check of a table definition: the config file, an operator's ``create_table``
  and a restore accept and refuse the same);
- :mod:`.commands`: what a table is told, each command checking its own shape and
  naming itself on the wire (``COMMANDS``, ``WIRE_COMMANDS``: the one list of them);
- :mod:`.events`: what it answers (``Event``, ``Step``, a handler's ``Outcome``);
- :mod:`.errors`: how it refuses (``TableError``, in the error tree of
  ``server.protocol.errors``).

Pure, like the core, and below it: the table (``server.table``) reads these words and
decides with them; the croupier, the gateway, the operator API and the process read them
too. This room reads only the engine and the wire's text rules (``server.protocol``),
never the table.
"""
