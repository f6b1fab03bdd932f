"""Model preparation (export, quantization, offline twins); the server never imports this package."""


class PrepareError(RuntimeError):
    """A failure whose message is meant for the person at the terminal, printed without a traceback."""
