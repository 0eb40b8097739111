"""Pure knowledge of LiteLLM, no I/O: its releases and their quirks as capabilities,
normalisation of what it lists, the model_info it owns, the keys that never converge or that
send requests elsewhere. Imports nothing else of sync.
"""
