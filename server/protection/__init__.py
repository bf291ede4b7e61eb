"""Player protection (responsible play): a player's restrictions (breaks, exclusions),
limits and play sessions with their reality checks (docs/architecture.md §5).

``rules`` decides how each changes (pure); the store only keeps them and applies a
change atomically. This package never imports the operator API's room.
"""
