"""The edge toward the proxy and the hosts (httpx): LiteLLM's admin client, the shapes and
errors of its answers, access and roles, the live read (routes, pods agreeing), the apply
executor and its write-back, progress, the probe and verify. May import core and below; never
report, github, edit.
"""
