"""fleet.yaml → Fleet: the model, loading and validating it, YAML with marks, located
problems, addresses and plaintext credentials in it. May import secrets, litellm, untrusted;
never core.
"""
