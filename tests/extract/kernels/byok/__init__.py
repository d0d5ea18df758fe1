"""Kernels written in the styles of third-party projects (Liger-Kernel, FlagGems): a package
with relative imports, ``@triton.autotune`` and ``@triton.heuristics`` wrappers, constexpr
defaults and dtype constexprs. Our own code; used to test ``python -m extract compile``."""
