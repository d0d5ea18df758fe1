"""The one place that reads the process environment.

Libraries take explicit arguments; entry points build a :class:`Settings` with
:func:`read_settings` and pass what is needed down. Worker processes receive their
environment from the parent (see :func:`worker_environment`), never by reading ours.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from corpus.harvest.device import parse_visible_devices

CODEGEN_ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "NVPTX_", "PTXAS_")
"""Environment variables with these prefixes may change generated code; their values enter the
toolchain fingerprint (and so run_id)."""

NON_CODEGEN = frozenset(
    {
        "TRITON_CACHE_DIR",
        "TRITON_HOME",
        "TRITON_DUMP_DIR",
        "TRITON_OVERRIDE_DIR",
        "TRITON_INTERPRET",
        "TRITON_PRINT_AUTOTUNING",
        "TRITON_CACHE_MANAGER",
        "TRITON_REMOTE_CACHE_BACKEND",
        "TRITON_ALWAYS_COMPILE",  # bypasses the cache; the code is the same
    }
)


class SettingsError(ValueError):
    """An environment variable has a value we cannot use; the message names it."""


@dataclass(frozen=True)
class Settings:
    """Environment-derived settings of a harvest."""

    codegen_env: Mapping[str, str]
    """Codegen-affecting variables (name -> value) set in this environment."""
    triton_cache_dir: str | None
    """TRITON_CACHE_DIR when set; compile workers and benchmark workers share it."""
    cuda_visible_devices: str | None
    cache_home: str = os.path.join(os.path.expanduser("~"), ".cache")
    """The user's cache directory: XDG_CACHE_HOME, else ~/.cache."""
    array_env: Mapping[str, str] = field(default_factory=dict)
    """The job-array variables (:data:`ARRAY_VARIABLES`) that are set, unparsed: only
    ``--shard auto`` reads them (:func:`array_shard`), so odd values elsewhere do no harm."""

    @property
    def visible_devices(self) -> tuple[str, ...] | None:
        """CUDA_VISIBLE_DEVICES entries (indices, GPU-/MIG- UUIDs) in order; None when unset."""
        return parse_visible_devices(self.cuda_visible_devices)


def read_settings(environ: Mapping[str, str] | None = None, *, allow_interpret: bool = False) -> Settings:
    """Read and validate the environment (``os.environ`` by default). ``allow_interpret``:
    TRITON_INTERPRET may be set (``corpus.record`` runs the workload in this process)."""
    env = dict(os.environ if environ is None else environ)
    codegen = {
        name: value
        for name, value in sorted(env.items())
        if name.startswith(CODEGEN_ENV_PREFIXES) and name not in NON_CODEGEN
    }
    if not allow_interpret and interpreter_selected(env):
        raise SettingsError(
            "TRITON_INTERPRET is set in the environment: unset it; the harvest selects the "
            "interpreter itself for its CPU benchmark worker (--device cpu)"
        )
    visible = env.get("CUDA_VISIBLE_DEVICES")
    try:
        parse_visible_devices(visible)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    home = env.get("HOME") or os.path.expanduser("~")
    return Settings(
        codegen_env=codegen,
        triton_cache_dir=env.get("TRITON_CACHE_DIR") or None,
        cuda_visible_devices=visible,
        cache_home=env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"),
        array_env={name: env[name] for name in ARRAY_VARIABLES if env.get(name, "").strip()},
    )


SLURM_TASK_ID = "SLURM_ARRAY_TASK_ID"
SLURM_TASK_COUNT = "SLURM_ARRAY_TASK_COUNT"
SLURM_TASK_MIN = "SLURM_ARRAY_TASK_MIN"
SLURM_TASK_STEP = "SLURM_ARRAY_TASK_STEP"
SLURM_TASK_MAX = "SLURM_ARRAY_TASK_MAX"
K8S_INDEX = "JOB_COMPLETION_INDEX"
SHARD_COUNT = "KERNEL_CORPUS_SHARD_COUNT"
"""The shard count of a Kubernetes Indexed Job: set it to the Job's ``completions`` (Kubernetes
exports each pod's index but not the count)."""
ARRAY_VARIABLES = (
    SLURM_TASK_ID, SLURM_TASK_COUNT, SLURM_TASK_MIN, SLURM_TASK_STEP, SLURM_TASK_MAX, K8S_INDEX, SHARD_COUNT
)  # fmt: skip


def _integer(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    text = env.get(name)
    if text is None:
        if default is None:
            raise SettingsError(f"--shard auto: {name} is not set")
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise SettingsError(f"--shard auto: {name}={text!r} is not an integer") from None


def array_shard(settings: Settings) -> tuple[int, int]:
    """``--shard auto``: (index, count) of this task of a Slurm job array
    (``SLURM_ARRAY_TASK_ID`` minus ``SLURM_ARRAY_TASK_MIN``, over ``SLURM_ARRAY_TASK_STEP``, of
    ``SLURM_ARRAY_TASK_COUNT``) or of a Kubernetes Indexed Job (``JOB_COMPLETION_INDEX`` of
    ``KERNEL_CORPUS_SHARD_COUNT``). Slurm wins when both are set. Raises
    :class:`SettingsError` naming the variable at fault, or saying neither is present."""
    env = settings.array_env
    if SLURM_TASK_ID in env:
        task, count = _integer(env, SLURM_TASK_ID), _integer(env, SLURM_TASK_COUNT)
        first, step = _integer(env, SLURM_TASK_MIN, 0), _integer(env, SLURM_TASK_STEP, 1)
        if step < 1 or (task - first) % step:
            raise SettingsError(
                f"--shard auto: {SLURM_TASK_ID}={task} is not {SLURM_TASK_MIN}={first} plus a "
                f"multiple of {SLURM_TASK_STEP}={step}"
            )
        last = _integer(env, SLURM_TASK_MAX, first + step * (count - 1))
        if last != first + step * (count - 1):
            # a list of ids (--array=0-3,5 or 0,2,7): its tasks cannot be numbered 0..N-1 from
            # the first id and the step; some would harvest a shard, others stop, and the
            # shards of the latter would be missing from the dataset
            raise SettingsError(
                f"--shard auto: the job array's ids are not evenly spaced ({SLURM_TASK_MIN}={first}, "
                f"{SLURM_TASK_MAX}={last}, {SLURM_TASK_STEP}={step}, {SLURM_TASK_COUNT}={count}), "
                "so its tasks cannot be numbered as shards: use a range (--array=0-15 or "
                "--array=1-31:2), or give each task --shard i/N"
            )
        index, source = (task - first) // step, f"{SLURM_TASK_ID}={task}"
    elif K8S_INDEX in env:
        index, count = _integer(env, K8S_INDEX), _integer(env, SHARD_COUNT)
        source = f"{K8S_INDEX}={index}"
    else:
        raise SettingsError(
            f"--shard auto: neither a Slurm job array ({SLURM_TASK_ID}, {SLURM_TASK_COUNT}) nor "
            f"a Kubernetes Indexed Job ({K8S_INDEX} with {SHARD_COUNT}) is in the environment; "
            "give --shard i/N"
        )
    if count < 1 or not 0 <= index < count:
        raise SettingsError(f"--shard auto: {source} gives shard {index}, outside 0..{count - 1} of {count}")
    return index, count


def array_source(settings: Settings) -> str:
    """The job-array variables ``--shard auto`` took its shard from (:func:`array_shard`), as
    ``NAME=value`` pairs, so that a task's log says which task of the array it was."""
    env = settings.array_env
    if SLURM_TASK_ID in env:
        names: tuple[str, ...] = (SLURM_TASK_ID, SLURM_TASK_MIN, SLURM_TASK_STEP, SLURM_TASK_COUNT)
    else:
        names = (K8S_INDEX, SHARD_COUNT)
    return " ".join(f"{name}={env[name].strip()}" for name in names if name in env)


def interpreter_selected(environ: Mapping[str, str] | None = None) -> bool:
    """True when TRITON_INTERPRET selects Triton's CPU interpreter."""
    env = os.environ if environ is None else environ
    return env.get("TRITON_INTERPRET", "0") not in ("", "0", "false", "False")


def select_interpreter() -> None:
    """Select Triton's interpreter for this process (``corpus.record`` on a machine without a
    GPU). Must run before the workload imports its kernels: ``@triton.jit`` decides between the
    compiler and the interpreter when it decorates."""
    os.environ["TRITON_INTERPRET"] = "1"


@contextlib.contextmanager
def compiler_selected() -> Iterator[None]:
    """TRITON_INTERPRET=0 while the block runs (then restored): a ``spawn`` worker started here
    re-imports the parent's main module before its own environment applies, and must import
    Triton with the compiler, not the interpreter, selected."""
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved


def triton_cache_dir(settings: Settings, toolchain: Mapping[str, object]) -> str:
    """Where a harvest keeps Triton's cache when TRITON_CACHE_DIR is not set: a stable
    directory per Triton build, ``<cache home>/kernel-corpus/triton/<key>``, so reruns reuse
    compiled kernels and nothing is left in $TMPDIR. Created by Triton on first use."""
    from schemas.identity import content_hash

    key = content_hash(str(toolchain.get("triton", "")), str(toolchain.get("triton_key", "")))
    return os.path.join(settings.cache_home, "kernel-corpus", "triton", key)


SINGLE_THREAD_MATH = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The interpreter's NumPy (tl.dot is np.matmul) and torch math stay on the launching thread,
so the benchmark worker's thread CPU time is all of a launch's work. Measured on the tiny
suite: thread and process CPU time of interpreted dot kernels agree (BLAS does not split such
small products), so pinning loses no speed; it keeps that true for larger shapes and stops
helper threads competing with a loaded machine. The measure worker also applies the limit at
run time (threadpoolctl), for libraries loaded before this environment took effect."""


def worker_environment(
    settings: Settings, *, interpret: bool, cache_dir: str, scratch_dir: str | None = None
) -> dict[str, str]:
    """Variables a worker process must see before it imports Triton or any kernel module.

    ``scratch_dir``: the worker's TMPDIR, a directory the parent owns and removes, so the
    scratch files of a killed worker (MLIR parse files, ptxas output) do not pile up."""
    environment = {"TRITON_INTERPRET": "1" if interpret else "0", "TRITON_CACHE_DIR": cache_dir}
    if scratch_dir is not None:
        environment["TMPDIR"] = scratch_dir
    if interpret:
        environment.update(SINGLE_THREAD_MATH)
    return environment


def worker_environments(
    settings: Settings, *, cache_dir: str, scratch_dir: str | None = None
) -> Callable[[bool], dict[str, str]]:
    """:func:`worker_environment` of one harvest's workers, by ``interpret`` (a
    :class:`corpus.harvest.runner.Harvester`'s ``environment_for``)."""

    def environment_for(interpret: bool) -> dict[str, str]:
        return worker_environment(
            settings, interpret=interpret, cache_dir=cache_dir, scratch_dir=scratch_dir
        )

    return environment_for
