"""headscope's one exception."""


class HeadscopeError(Exception):
    """What the library refused, with its one-line message (str(e)); status is
    the library's hs_status code (0 when the Python side refused the input
    before calling it): 1 out of memory, 2 I/O, 3 format, 4 config, 5 input,
    6 numeric, 7 a hook aborted the run."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.status = status
