"""The semantic core: taints, tolerations, matching, validation and the kubectl taint grammar.

Modules here import nothing else of taintplane's; every other package builds on them.
"""
