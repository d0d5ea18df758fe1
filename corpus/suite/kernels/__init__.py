"""Built-in kernel families, one module each."""
