"""Authentication (static bearer tokens), authorization (RBAC) and the access reviews, as
kube-apiserver runs them with ``--token-auth-file`` and ``--authorization-mode=RBAC``."""
