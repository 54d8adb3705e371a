"""Step counting shared by the framework helpers; no framework imported."""
import functools

from . import _marker


class Steps:
    """Marks "step N", N = start, start+1, ... once per use.

    As a context manager the step is marked on entry:
        steps = Steps()
        for batch in data:
            with steps:
                state = train_step(state, batch)
    As a decorator every call marks the next step first:
        train_step = Steps()(train_step)
    Or call .mark() where a step starts.
    """

    def __init__(self, start=0):
        self.next = int(start)

    def mark(self):
        _marker.mark_step(self.next)
        self.next += 1

    def __enter__(self):
        self.mark()
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def marked(*args, **kwargs):
            self.mark()
            return fn(*args, **kwargs)

        marked.vramtrace_steps = self
        return marked
