"""GitHub's REST edge (httpx): the client, pull requests, the Actions environment (job
summary, artifacts), the comment as a value with its hidden header, whose comment is whose. May
import core and below; never live, report, edit.
"""
