"""fleet.yaml → Fleet: the model, loading and validating it, YAML with marks, located
problems, addresses and plaintext credentials in it, and its targets (placement and overlays,
promotion order, what one target sees: targets.for_target). May import secrets, litellm,
untrusted; never core.
"""
