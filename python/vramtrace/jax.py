"""Step markers for JAX: each call of the training step marks a step.

    @vramtrace.jax.mark_steps          # or: train_step = mark_steps(jax.jit(f))
    @jax.jit
    def train_step(state, batch): ...

or around the call:

    steps = vramtrace.jax.Steps()
    for batch in data:
        with steps:
            state = train_step(state, batch)

JAX dispatches asynchronously: the mark is the step's dispatch. With
block=True, mark_steps waits for each step's result (jax.block_until_ready)
so one step's device work ends before the next is marked. Outside a trace
nothing is marked. Imports jax only for block=True, on the first call.
"""
import functools

from ._steps import Steps

__all__ = ["Steps", "mark_steps"]


def mark_steps(fn=None, *, start=0, block=False):
    """Decorator: each call of fn first marks "step N" (N = start, ...)."""
    if fn is None:
        return functools.partial(mark_steps, start=start, block=block)
    steps = Steps(start)
    if not block:
        return steps(fn)

    @functools.wraps(fn)
    def marked(*args, **kwargs):
        import jax
        steps.mark()
        return jax.block_until_ready(fn(*args, **kwargs))

    marked.vramtrace_steps = steps
    return marked
