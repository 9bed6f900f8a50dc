"""Emerging-motif engine (SPEC section 5): H3 hashing, Count-Min with conservative update, the
heavy-hitter store, the all-k engine and the Vitis kernel."""
