"""The command line (click only here): one module per command, thin — parse options, call
the parts, map their errors to exit codes and write what they return. May import every part.
"""
