"""Exceptions: one class per gj_status, all derived from :class:`GridJitError`.

Every failing call of the library raises the class of its status, carrying the message
the library left for the calling thread (gj_context_errmsg, read right after the call on
the same thread, as the library's per-thread messages require). Classes also derive
from the closest built-in exception where one fits, so ``except ValueError`` catches a
bad configuration.
"""

from __future__ import annotations

from . import _capi


class GridJitError(Exception):
    """A call into libgridjit failed.

    Attributes:
        status: the gj_status number (pinned by the library, docs/ABI.md).
        status_name: e.g. ``"GJ_ERROR_INVALID_CONFIG"``.
        message: the library's one-line message (gj_context_errmsg), or its fixed
            description of the status when it left none.
        call: the C function that failed, e.g. ``"gj_encoding_create"``.
    """

    status = -1

    def __init__(self, message: str, status: int | None = None, call: str | None = None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message
        self.call = call

    @property
    def status_name(self) -> str:
        return status_name(self.status)

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(GridJitError, ValueError):
    status = 1


class InvalidConfigError(GridJitError, ValueError):
    status = 2


class OutOfMemoryError(GridJitError, MemoryError):
    status = 3


class LayoutTooLargeError(GridJitError, ValueError):
    status = 4


class NoNvrtcError(GridJitError, RuntimeError):
    status = 5


class CompileError(GridJitError, RuntimeError):
    """NVRTC refused the source; ``log`` holds its log with the numbered source lines
    around each error (gj_program_log)."""

    status = 6

    def __init__(self, message: str, status: int | None = None, call: str | None = None, log: str = ""):
        super().__init__(message, status, call)
        self.log = log

    def __str__(self) -> str:
        return f"{self.message}\n{self.log}" if self.log else self.message


class UnsupportedArchError(GridJitError, ValueError):
    status = 7


class NoDriverError(GridJitError, RuntimeError):
    status = 8


class NoDeviceError(GridJitError, RuntimeError):
    status = 9


class CudaError(GridJitError, RuntimeError):
    status = 10


class GridJitIOError(GridJitError):
    status = 11


class NotFoundError(GridJitError, LookupError):
    status = 12


class CorruptError(GridJitError):
    status = 13


class PassNotCompiledError(GridJitError, ValueError):
    status = 14


class InternalError(GridJitError, RuntimeError):
    status = 15


#: gj_status number -> exception class.
ERRORS_BY_STATUS: dict[int, type[GridJitError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        InvalidConfigError,
        OutOfMemoryError,
        LayoutTooLargeError,
        NoNvrtcError,
        CompileError,
        UnsupportedArchError,
        NoDriverError,
        NoDeviceError,
        CudaError,
        GridJitIOError,
        NotFoundError,
        CorruptError,
        PassNotCompiledError,
        InternalError,
    )
}


def status_name(status: int) -> str:
    """gj_status_name(): ``"GJ_ERROR_INVALID_CONFIG"`` etc., ``"GJ_UNKNOWN_STATUS"`` otherwise."""
    return _capi.text(_capi.lib.gj_status_name(status))


def status_message(status: int) -> str:
    """gj_status_message(): the fixed one-line description of a status."""
    return _capi.text(_capi.lib.gj_status_message(status))


def error_for(status: int, errmsg: str, call: str, log: str = "") -> GridJitError:
    """The exception for a failed call: its status's class, the library's message (or the
    status's description when the message is empty); a CompileError also carries log."""
    cls = ERRORS_BY_STATUS.get(status, GridJitError)
    message = errmsg or f"{call}: {status_message(status)}"
    if cls is CompileError:
        return CompileError(message, status, call, log=log)
    return cls(message, status, call)
