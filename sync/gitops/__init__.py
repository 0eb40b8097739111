"""The GitOps loops: the pull-request plan comment, apply on merge, the drift issue, the
host-moved proposal, and git (refs, history of fleet.yaml, which addresses a key is trusted to
go to). May import report, live, github, edit and everything below; never commands.
"""
