"""Clients for the client profile: the project's own (passes) and the original even split (fails)."""
