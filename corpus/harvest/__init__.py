"""The harvest: the autotune runner that writes the dataset (``python -m corpus.harvest``).

Modules in pipeline order:

1. plan: :mod:`.plan` (runs and their sampled configs), :mod:`.identity` (kernel_id, run_id,
   toolchain fingerprint), :mod:`.resume` (what a dataset already holds);
2. compile: :mod:`.compile_worker` (compile one config for the IR target, extract its IR),
   :mod:`.binary` (the identity of a built binary);
3. measure: :mod:`.measure_worker` (check a config against the reference, time it),
   :mod:`.timing` (the clocks), :mod:`.interleave` (the pass schedule over a run's configs);
4. rows: :mod:`.rows` (measurements, runs and kernels rows).

Around them: :mod:`.scheduler` (which lane takes which run, how far compiles run ahead),
:mod:`.runner` (compile pool, measure lanes that survive their workers, buffered writes),
:mod:`.workers` (worker processes with hard timeouts), :mod:`.device` and :mod:`.settings`
(device facts, the one place that reads the environment), :mod:`.app` and :mod:`.__main__`
(the command), :mod:`.checks`, :mod:`.report`, :mod:`.scratch`, :mod:`.selftest`, and
:mod:`.cluster` (the same harvest on a Ray cluster: one actor per GPU fed runs dynamically).
"""
