"""The operator's HTTP API under ``/operator/v1/`` (docs/operator-api.md).

``api`` (one router, one auth, the per-caller failure limit), ``idempotency``, and the
routes: ``reads``, ``tables``, ``wallet``, ``transfers``, ``reconciliation``,
``protection`` (a player's restriction and limits). ``routes.install`` is the one route
list, called by ``server.process.assemble``; ``context`` names what the routes need of
the gateway, the croupier and player protection (one ``OperatorSide``).

It never decides a rule of the game, and is never imported by the gateway or by player
protection.
"""
