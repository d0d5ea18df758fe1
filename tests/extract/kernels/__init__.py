"""Small Triton kernels written for the extract tests; each exercises one IR construct."""
