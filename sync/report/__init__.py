"""Outputs: each format of a plan, a result and problems (text, markdown, JSON, GitHub
annotations), one module each, looked up by name in formats.py; the redaction of live values
in them. May import core and below; never live, github, edit.
"""
