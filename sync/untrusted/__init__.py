"""Bytes from outside: the one bounded JSON parser and the one bounded HTTP request
(a total deadline and a size cap) that live and github share. Imports nothing else of sync.
"""
