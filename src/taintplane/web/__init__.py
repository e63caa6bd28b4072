"""The read-only web dashboard (served by ``taintplane up`` at ``/dashboard/``)."""
