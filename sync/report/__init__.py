"""Outputs: each format of a plan, a result and problems (text, markdown, JSON), and the
redaction of live values in them. May import core and below; never live, github, edit.
"""
