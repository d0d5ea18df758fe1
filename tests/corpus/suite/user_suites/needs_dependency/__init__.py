"""A user suite whose module imports a project this machine does not have."""
