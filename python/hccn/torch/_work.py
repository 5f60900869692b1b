"""Work and futures of the hccn backend, and when operations complete.

Every operation is posted as an hccn asynchronous operation on the rank
thread and completes when someone waits for it: hccn then advances the
rank's simulated clock to the operation's end, the results are copied into
the torch tensors, and the torch Future gets its value. Waiting happens at

- ``Work.wait()`` (torch's blocking calls do this themselves),
- ``Work.get_future().wait()`` and ``.then(...)`` chains of it (the
  futures are HccnFuture, which complete their operation when waited for),
- the end of a backward pass during which operations were posted: a final
  autograd callback completes every pending one in posting order, before
  DDP's reducer (whose own callback comes later) reads the buckets. This is
  how DDP's bucketed allreduces and its comm hooks run on this backend.

A future that only C++ code waits for outside a backward pass (for example
``torch.futures.wait_all``) is not completed by the wait: call
``hccn.torch.synchronize()`` first. Work objects are Python subclasses of
c10d's Work; they stay referenced until waited for (and the last
``KEEP`` of them afterwards), since C++ code that calls wait() on a Work
whose Python object is gone would call c10d's base wait and block.
"""
import collections
import threading

import torch
from torch._C._distributed_c10d import Work

from hccn.torch._convert import wrap_error

KEEP = 1024


class Pending:
    """One posted operation: finish() (run on the rank thread) waits for
    it and returns its result; complete() does that once."""

    def __init__(self, tracker, rank, op, finish):
        self.tracker, self.rank, self.op = tracker, rank, op
        self._finish = finish
        self._lock = threading.Lock()
        self.done = False
        self.error = None
        self.future = HccnFuture(self)

    def complete(self):
        """Waits for the operation (once) and settles its future; never
        raises (the error is in self.error and in the future)."""
        with self._lock:
            if self.done:
                return
            try:
                value = self.tracker.service.call(self._finish)
            except BaseException as e:
                self.error = wrap_error(self.rank, self.op, e)
            self.done = True
            self.tracker.forget(self)
        if self.error is not None:
            self.future.set_exception(self.error)
        else:
            self.future.set_result(value)


class Tracker:
    """The pending operations of one rank (all its process groups), in
    posting order, and the recent Work objects kept alive."""

    def __init__(self, service):
        self.service = service
        self._lock = threading.Lock()
        self._pending = collections.OrderedDict()
        self._recent = collections.deque(maxlen=KEEP)
        self._callback_queued = False

    def add(self, rank, op, finish):
        """Registers a posted operation; returns its Work."""
        p = Pending(self, rank, op, finish)
        with self._lock:
            self._pending[id(p)] = p
        self._queue_backward_flush()
        work = HccnWork(p)
        self._recent.append(work)
        return work

    def forget(self, p):
        with self._lock:
            self._pending.pop(id(p), None)

    def flush(self):
        """Completes every pending operation in posting order; returns the
        first error among them (not raised)."""
        with self._lock:
            todo = list(self._pending.values())
            self._callback_queued = False
        first = None
        for p in todo:
            p.complete()
            if first is None and p.error is not None:
                first = p.error
        return first

    def _queue_backward_flush(self):
        """During a backward pass, makes its end complete the pending
        operations (once per pass)."""
        with self._lock:
            if self._callback_queued:
                return
            try:
                torch.autograd.Variable._execution_engine.queue_callback(
                    self.flush)
            except RuntimeError:        # not inside a backward pass
                return
            self._callback_queued = True


class HccnFuture(torch.futures.Future):
    """A torch Future whose wait() completes its hccn operation first."""

    def __init__(self, pending=None, parent=None):
        super().__init__()
        self._pending = pending
        self._parent = parent

    def _drive(self):
        if self._pending is not None:
            self._pending.complete()
        elif self._parent is not None:
            self._parent._drive()

    def wait(self):
        self._drive()
        return super().wait()

    def value(self):
        self._drive()
        return super().value()

    def then(self, callback):
        child = HccnFuture(parent=self)

        def settle(fut):
            try:
                child.set_result(callback(fut))
            except BaseException as e:
                child.set_exception(e)
        self.add_done_callback(settle)
        return child


class HccnWork(Work):
    """c10d Work of one hccn operation."""

    def __init__(self, pending):
        super().__init__()
        self._p = pending

    def wait(self, timeout=None):
        """Completes the operation (advancing the rank's simulated clock to
        its end); raises its error. timeout is ignored: hccn's own timeout
        (HCCN_TIMEOUT) bounds every wait."""
        self._p.complete()
        if self._p.error is not None:
            raise self._p.error
        return True

    def is_completed(self):
        return self._p.done

    def is_success(self):
        return self._p.done and self._p.error is None

    def exception(self):
        return self._p.error

    def result(self):
        self.wait()
        value = self._p.future.value()
        return value if isinstance(value, list) else []

    def synchronize(self):
        self.wait()

    def get_future(self):
        return self._p.future


def done_work(tracker, rank, op, value):
    """A Work that is already complete with value."""
    return tracker.add(rank, op, lambda: value)
