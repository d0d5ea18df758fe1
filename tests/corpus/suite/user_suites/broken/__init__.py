"""A user suite whose family breaks the contract in two ways (see scale_rows.py)."""
