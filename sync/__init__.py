"""fleet-sync: keep a LiteLLM proxy's routes equal to fleet.yaml in git."""

__version__ = "1.0.0"
