"""Clients for the client profile: the project's own and the spec client (both pass), the zoo
(the spec client with one bug each) and an adapter for a trainer's own inference pool."""
