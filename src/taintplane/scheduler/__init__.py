"""The scheduler: a client of the API that binds pods to nodes."""
