"""Step markers for PyTorch Lightning:

    trainer = lightning.Trainer(callbacks=[vramtrace.lightning.StepMarker()])

Each training batch marks "step N" as it starts (N counts on across
epochs). Outside a trace the callback does nothing. Uses `lightning`
(lightning.pytorch), else `pytorch_lightning`.
"""
from ._steps import Steps

try:
    from lightning.pytorch.callbacks import Callback as _Callback
except ImportError:
    from pytorch_lightning.callbacks import Callback as _Callback


class StepMarker(_Callback):
    """Marks "step N" at the start of each training batch."""

    def __init__(self, start=0):
        super().__init__()
        self.steps = Steps(start)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
        self.steps.mark()
