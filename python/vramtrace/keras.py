"""Step markers for Keras, with no code in the training loop:

    model.fit(data, epochs=3, callbacks=[vramtrace.keras.StepMarker()])

Each training batch marks "step N" as it begins (N counts on across epochs),
the start of that step, which is what a step marker means. Outside a trace
the callback does nothing. Works with Keras 3 (`keras`, also tf.keras from
TensorFlow 2.16 on) and with tf_keras when TF_USE_LEGACY_KERAS is set.
"""
import os

from ._steps import Steps


def _keras():
    if os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true", "yes"):
        try:
            import tf_keras
            return tf_keras
        except ImportError:
            pass
    try:
        import keras
        return keras
    except ImportError:
        from tensorflow import keras
        return keras


_k = _keras()


class StepMarker(_k.callbacks.Callback):
    """Marks "step N" at the beginning of each training batch."""

    def __init__(self, start=0):
        super().__init__()
        self.steps = Steps(start)

    def on_train_batch_begin(self, batch, logs=None):
        self.steps.mark()
