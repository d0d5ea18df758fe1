"""The benchmark suite: kernel families, their config spaces, shapes and references."""
