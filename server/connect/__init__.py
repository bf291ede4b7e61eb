"""How a process reaches Redis: the one connector (:func:`.redis.connect`) the store, the
bus, the leases and the shared rate limits all use, with Sentinel URLs, timed writes and
the reconnect to a new primary after a failover.
"""
