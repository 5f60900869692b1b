"""Status codes of libhccn and the Python exceptions that carry them.

Every failed C call raises the subclass of HccnError for its status, with
the C library's detailed message (hccn_last_error() of the calling rank).
Argument errors found in Python raise InvalidArgumentError, as the C
library would.
"""

OK = 0
ERR_INVALID = -1
ERR_NOMEM = -2
ERR_TOPOLOGY = -3
ERR_MISMATCH = -4
ERR_TIMEOUT = -5
ERR_REMOTE = -6
ERR_UNSUPPORTED = -7
ERR_IO = -8
ERR_ABORTED = -9
ERR_INPROGRESS = -10
ERR_FAULT = -11
ERR_INTERNAL = -12
ERR_REVOKED = -13

STATUS_NAMES = {
    OK: "HCCN_OK", ERR_INVALID: "HCCN_ERR_INVALID",
    ERR_NOMEM: "HCCN_ERR_NOMEM", ERR_TOPOLOGY: "HCCN_ERR_TOPOLOGY",
    ERR_MISMATCH: "HCCN_ERR_MISMATCH", ERR_TIMEOUT: "HCCN_ERR_TIMEOUT",
    ERR_REMOTE: "HCCN_ERR_REMOTE", ERR_UNSUPPORTED: "HCCN_ERR_UNSUPPORTED",
    ERR_IO: "HCCN_ERR_IO", ERR_ABORTED: "HCCN_ERR_ABORTED",
    ERR_INPROGRESS: "HCCN_ERR_INPROGRESS", ERR_FAULT: "HCCN_ERR_FAULT",
    ERR_INTERNAL: "HCCN_ERR_INTERNAL", ERR_REVOKED: "HCCN_ERR_REVOKED",
}


class HccnError(Exception):
    """An hccn failure. ``status`` is the C status code (negative),
    ``status_name`` its name, ``message`` the detailed message. When raised
    from run(), ``rank`` is the rank it was raised on."""

    status = ERR_INTERNAL

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    @property
    def status_name(self):
        return STATUS_NAMES.get(self.status, "HCCN_STATUS_%d" % self.status)


class InvalidArgumentError(HccnError, ValueError):
    status = ERR_INVALID


class OutOfMemoryError(HccnError, MemoryError):
    status = ERR_NOMEM


class TopologyError(HccnError):
    status = ERR_TOPOLOGY


class MismatchError(HccnError):
    status = ERR_MISMATCH


class HccnTimeoutError(HccnError, TimeoutError):
    status = ERR_TIMEOUT


class RemoteError(HccnError):
    status = ERR_REMOTE


class UnsupportedError(HccnError, NotImplementedError):
    status = ERR_UNSUPPORTED


class HccnIOError(HccnError, OSError):
    status = ERR_IO


class AbortedError(HccnError):
    status = ERR_ABORTED


class InProgressError(HccnError):
    status = ERR_INPROGRESS


class FaultError(HccnError):
    status = ERR_FAULT


class InternalError(HccnError):
    status = ERR_INTERNAL


class RevokedError(HccnError):
    """The communicator was revoked (hccn.revoke): shrink it."""
    status = ERR_REVOKED


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, OutOfMemoryError, TopologyError, MismatchError,
    HccnTimeoutError, RemoteError, UnsupportedError, HccnIOError,
    AbortedError, InProgressError, FaultError, InternalError,
    RevokedError)}


def error_class(status):
    """The HccnError subclass for a C status code."""
    return _BY_STATUS.get(status, HccnError)


def make_error(status, message):
    """An exception of the right class for status carrying message."""
    cls = error_class(status)
    if cls is HccnError:
        return HccnError(message, status)
    return cls(message)


def check(status, what=None):
    """Raises the error for a failed C call (status != 0) with the calling
    thread's hccn_last_error(); what names the call when the C library
    left no message."""
    if status == OK:
        return
    from hccn._lib import lib
    message = lib().last_error() or "%s failed" % (what or "hccn call")
    raise make_error(status, message)
