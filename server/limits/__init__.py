"""The rate limits: what one client may take of a process (docs/architecture.md §7).

``local`` counts one process's connections, rates and places in a table's queue
(``Limits``, ``Lines``, ``client_address``); ``shared`` holds the same caps and buckets
for a whole cluster in Redis (``SharedLimits``); ``bucket`` is the token bucket they
all spend; ``context`` names what they read of the settings (``LimitSettings``).

It never knows a rule of the game, sends a frame or imports another room of the shell
(the gateway, the operator API, protection, the process): only the store's Redis
connection and the bus's key prefix.
"""
