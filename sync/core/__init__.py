"""The pure reconciler, no I/O: routes and their ids, render, compare, ownership and
identity, the plan and its changes, the health gate, the safety rails, results. May import
fleet, secrets, litellm and untrusted, and deepdiff (compare, the only part that does); never an
edge (live, github, gitops), report, edit or commands.
"""
