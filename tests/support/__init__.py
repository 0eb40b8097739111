"""Test harnesses: the real LiteLLM, fake GitHub, fault proxy, upstreams, generators."""
