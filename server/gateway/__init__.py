"""The gateway: a process's client connections (docs/architecture.md §7).

``server.ChemmyServer`` holds the connections and relays each client's commands to the
table's owner over the bus; ``handlers`` (the registry), ``hello``, ``tables``,
``cashier``, ``session``, ``watchers``, ``hub`` (fan-out), ``lobby``, ``http`` and
``static`` (health, metrics, the web page's files), and ``sniff`` (which connections
are the operator's ``/operator/v1/`` requests, handed whole to the operator's API).
``context`` names what the handlers need of it, and what it needs of the operator's
API (``OperatorDoor``). The rate limits it applies are a room of their own
(``server.limits``).

It never decides a rule of the game, holds a table's state, or imports the operator
API's room (``server.operator``: that is installed on it by ``server.process.assemble``).
"""
