"""Pure-Python golden model: the obviously correct reference of every SPEC section.

Every hardware block and every fast backend is tested against these functions.
"""
