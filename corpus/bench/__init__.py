"""Benchmarks of the harvest machinery (``python -m corpus.bench harvest``)."""
