"""The rank thread: where every hccn call of a process group runs.

hccn calls of a rank must come from that rank's thread, the one that
hccn's Cluster.run() calls the rank function on. A process of a torch job
owns one rank, so its backend starts a service thread that enters
cluster.run() and then executes, in arrival order, the calls that torch's
threads (the training loop, autograd's) hand it through a queue
(ThreadService). A process group made on a rank thread itself (the
single-process tests run N process groups under hccn.run) calls straight
through (InlineService).
"""
import queue
import threading

from hccn import _state


class _Box:
    """One call's result, filled by the rank thread."""

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.error = None

    def result(self, thread=None):
        """The value (or raises the error); gives up when `thread`, the
        one that was to fill the box, has ended without doing so."""
        while not self.done.wait(1.0):
            if thread is not None and not thread.is_alive() and \
                    not self.done.is_set():
                raise RuntimeError("hccn backend: the rank thread has "
                                   "stopped")
        if self.error is not None:
            raise self.error
        return self.value


class InlineService:
    """Runs calls on the calling thread, which must be a rank thread."""

    def __init__(self):
        self.state = _state.current("ProcessGroupHccn")

    def call(self, fn, *args):
        """fn(*args), here and now."""
        return fn(*args)

    def close(self):
        """Nothing to stop."""


class ThreadService:
    """A thread inside cluster.run() serving calls from a queue.

    call() blocks the caller until the rank thread has run the function;
    calls are served one at a time, in arrival order. close() stops the
    loop, waits for the thread and closes the cluster."""

    def __init__(self, cluster):
        self._cluster = cluster
        self._queue = queue.Queue()
        self._started = _Box()
        self._error = None
        self.state = None
        self._thread = threading.Thread(target=self._main, daemon=True,
                                        name="hccn-rank")
        self._thread.start()
        self._started.result()        # raises if the run could not start

    def _main(self):
        try:
            self._cluster.run(self._loop)
        except BaseException as e:     # a failed start, or the run's error
            self._error = e
            if not self._started.done.is_set():
                self._started.error = e
                self._started.done.set()
        finally:
            self._fail_pending()

    def _loop(self):
        self.state = _state.current("service")
        self._started.done.set()
        while True:
            item = self._queue.get()
            if item is None:
                return None
            fn, args, box = item
            try:
                box.value = fn(*args)
            except BaseException as e:
                box.error = e
            box.done.set()

    def _fail_pending(self):
        """Ends the calls still queued when the loop is gone."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[2].error = RuntimeError(
                    "hccn backend: the rank thread has stopped (%s)"
                    % (self._error or "process group destroyed"))
                item[2].done.set()

    def call(self, fn, *args):
        """fn(*args) on the rank thread; returns its value or raises its
        exception."""
        if not self._thread.is_alive():
            raise RuntimeError("hccn backend: the rank thread has stopped "
                               "(%s)" % (self._error or "closed"))
        box = _Box()
        self._queue.put((fn, args, box))
        return box.result(self._thread)

    def close(self):
        """Stops the rank thread (after the calls queued before) and
        destroys the cluster. Idempotent."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._cluster.close()
