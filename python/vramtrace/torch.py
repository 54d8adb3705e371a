"""Step markers for PyTorch, with no code in the training loop:

    optimizer = torch.optim.AdamW(model.parameters())
    vramtrace.torch.mark_steps(optimizer)

After each optimizer.step() the next step starts: "step 1", "step 2", ...
(an optimizer step post-hook, PyTorch 2.0+), so the first iteration counts
as warm-up. Outside a trace the hook does nothing. Lightning:
vramtrace.lightning.StepMarker. Does not import torch.
"""
from ._steps import Steps


def mark_steps(optimizer, start=1):
    """Mark "step N" (N = start, start+1, ...) after each optimizer.step().
    Returns the hook's handle: handle.remove() stops the marks."""
    register = getattr(optimizer, "register_step_post_hook", None)
    if register is None:
        raise TypeError(f"{type(optimizer).__name__} has no register_step_post_hook "
                        "(a torch.optim.Optimizer of PyTorch 2.0 or later is needed)")
    steps = Steps(start)

    def hook(opt, args, kwargs):
        steps.mark()

    return register(hook)
