"""The controllers of the controller manager, one module each, and the manager that runs
them. Like the scheduler, they reach the cluster only through the API."""
