"""Writing fleet.yaml: set-host's byte-exact writer and import (its rules, its YAML). May
import core and below; never live, github, report.
"""
