"""Slash commands, pure: which lines of a comment are commands (`lines.py`), each line parsed
into a typed command or the reason it is wrong (`parse.py`), and its arguments checked against
the policy (`args.py`). It imports only the standard library.
"""
