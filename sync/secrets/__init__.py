"""What leaves the process: credentials recognised by shape and key name, the final
scrub of every output, and the one display rule for strings fleet-sync did not write. May
import litellm (which keys LiteLLM masks) only.
"""
