"""The autotune runner that writes the dataset (``python -m corpus.harvest``)."""
