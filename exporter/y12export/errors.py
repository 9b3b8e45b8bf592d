"""The single error type of the exporter: every expected failure is one line, exit status 1."""


class ExportError(Exception):
    """An input the exporter refuses or cannot read; str(e) is the one-line reason."""


def require(cond, msg):
    """Raises ExportError(msg) unless cond holds."""
    if not cond:
        raise ExportError(msg)
