"""Point-to-point messages of the ``"concord"`` torch.distributed backend, over the
transport, and its monitored barrier, through the c10d store.

``send``, ``recv`` and ``recv_anysource`` travel over a :class:`concord._core.P2pChannel`: a
communicator of the process's transport world (MPI or UCX) of the group's own, so the bytes
go rank to rank as the runtime's do (one message each, no store round trips) and never
match the runtime's messages. The default group's channel duplicates the transport world
(every rank creates it in init_process_group); a subgroup's is the point-to-point
communicator of its process set, which the members' runtimes made alone with the set's
other communicators (TransportWorld::create_group: MPI_Comm_create_group, or the members
agreeing on a UCX communicator). Ordering follows MPI's non-overtaking rule per (sender,
receiver, tag); a receive from any source takes the oldest message on its tag of whichever
sender the transport matches first, and its Work's ``_source_rank()`` names that sender.

A receive needs the message's exact length: a message of another byte count fails the
receive with a RuntimeError naming the sender, the tag and both sizes (a longer one: that it
was longer) on the receiving rank; the send completes. A CPU contiguous tensor is sent and
received in place; others (non-contiguous, CUDA) through a contiguous CPU copy.
"""

import datetime
import threading
import time

from concord._core import ConcordError
from concord.torch.c10d_work import ConcordWork, seconds


def _staged(tensor):
    """The contiguous CPU tensor whose bytes go on the wire for ``tensor`` (``tensor``
    itself when it is one)."""
    if tensor.device.type == "cpu" and tensor.is_contiguous():
        return tensor
    return tensor.detach().contiguous().cpu()


def _describe(tensor):
    return f"tensor of shape {list(tensor.shape)}, {tensor.dtype}, {tensor.numel() * tensor.element_size()} bytes"


class P2pWork(ConcordWork):
    """The Work of one send or receive: completed by whichever thread waits for it
    (``wait()`` polls the transport with the GIL released) or asks ``is_completed()``; a
    future, when asked for, is completed by a helper thread that waits.

    Args:
        request (concord._core.P2pRequest): the transport's request.
        tensor (torch.Tensor): the caller's tensor; ``staged`` the memory on the wire.
        receive (bool): copy ``staged`` into ``tensor`` on completion (receives, when they
            differ) and report the sender.
        description, timeout, callbacks: as :class:`ConcordWork`.
    """

    def __init__(self, request, tensor, staged, receive, description, timeout, callbacks):
        super().__init__(description, timeout, callbacks)
        self._request = request
        self._tensor = tensor
        self._staged = staged
        self._receive = receive
        self._polling = threading.Lock()

    def _settle_request(self, limit):
        """Polls the request for at most ``limit`` seconds (negative: no limit) and finishes
        the work once it completed or failed; True when the work is done."""
        if self._done.is_set():
            return True
        if not self._polling.acquire(timeout=-1 if limit < 0 else limit):
            return self._done.is_set()
        try:
            if self._done.is_set():
                return True
            try:
                if not (self._request.wait(limit) if limit != 0 else self._request.test()):
                    return False
            except ConcordError as error:
                self.finish(None, RuntimeError(f"concord: {self._description}: {error}"))
                return True
            if self._receive and self._staged is not self._tensor:
                self._tensor.copy_(self._staged)
            self.finish([self._tensor], None, self._request.source() if self._receive else -1)
            return True
        finally:
            self._polling.release()

    def wait(self, timeout=None):
        """Blocks until the message was sent (the tensor may be reused) or received into the
        tensor, at most ``timeout`` (default: the group's timeout).

        Raises:
            RuntimeError: the transport failed, the received message had another length,
                or the timeout passed (the operation stays posted).
        """
        limit = seconds(timeout, self._timeout)
        if not self._settle_request(limit):
            raise RuntimeError(f"concord: {self._description} did not finish within {limit:g} s "
                               "(the timeout of init_process_group/new_group, or wait()'s); the peer may not have "
                               "called the matching send/recv")
        return super().wait(0.0)

    def is_completed(self):
        """True once the message was sent or received, successfully or not (never blocks)."""
        return self._settle_request(0)

    def get_future(self):
        """As ConcordWork.get_future; a helper thread waits for the transport."""
        future = super().get_future()
        if not self._done.is_set():
            threading.Thread(target=self._settle_request, args=(self._timeout,), name="concord-c10d-p2p",
                             daemon=True).start()
        return future


class ChannelMessages:
    """Tagged messages between the ranks of one process group over its P2pChannel.

    Args:
        channel (concord._core.P2pChannel): the group's channel (its ranks are the group's).
        timeout (float): seconds a send or receive waits by default.
        callbacks (CallbackPool): completes the works' futures.
    """

    def __init__(self, channel, timeout, callbacks):
        self._channel = channel
        self._rank = channel.rank()
        self._size = channel.size()
        self._timeout = timeout
        self._callbacks = callbacks

    def _check(self, peer, tag, what):
        if peer is not None and not 0 <= peer < self._size:
            raise ValueError(f"concord: {what}: rank {peer} is outside the group's ranks [0, {self._size})")
        if peer == self._rank:
            raise ValueError(f"concord: {what}: rank {peer} is this process")
        if tag < 0:
            raise ValueError(f"concord: {what}: tag {tag} is negative")

    def _start(self, post, tensor, receive, description):
        """Posts the transport request for ``tensor`` (``post(address, bytes, buffer)``)
        and returns its P2pWork; a failure at posting is a RuntimeError naming the call."""
        staged = _staged(tensor)
        description = f"{description} {'into' if receive else 'of'} {_describe(tensor)} on rank {self._rank}"
        try:
            request = post(staged.data_ptr(), staged.numel() * staged.element_size(), staged)
        except ConcordError as error:
            raise RuntimeError(f"concord: {description}: {error}") from error
        return P2pWork(request, tensor, staged, receive, description, self._timeout, self._callbacks)

    def send(self, tensor, peer, tag):
        """Starts sending ``tensor``'s bytes to group rank ``peer`` with ``tag``; returns its
        P2pWork (done once the tensor may be reused)."""
        self._check(peer, tag, "send")
        return self._start(lambda data, size, buffer: self._channel.isend(data, size, peer, tag, buffer), tensor,
                           False, f"send to rank {peer} (tag {tag})")

    def recv(self, tensor, peer, tag):
        """Starts receiving group rank ``peer``'s next message on ``tag`` into ``tensor``."""
        self._check(peer, tag, "recv")
        return self._start(lambda data, size, buffer: self._channel.irecv(data, size, peer, tag, buffer), tensor,
                           True, f"recv from rank {peer} (tag {tag})")

    def recv_any(self, tensor, tag):
        """Starts receiving the next message on ``tag`` from any rank into ``tensor``; the
        work's ``_source_rank()`` names the sender."""
        self._check(None, tag, "recv from any source")
        return self._start(lambda data, size, buffer: self._channel.irecv_any_source(data, size, tag, buffer),
                           tensor, True, f"recv from any rank (tag {tag})")

    def close(self):
        """Frees the channel's communicator."""
        self._channel.close()


class StoreBarrier:
    """Gloo's monitored barrier among the ranks of one process group, through its store.

    Args:
        store: the group's c10d store (``set``, ``wait``).
        rank (int), size (int): this process's group rank and the group size.
        timeout (float): seconds the barrier waits by default.
    """

    def __init__(self, store, rank, size, timeout):
        self._store = store
        self._rank = rank
        self._size = size
        self._timeout = timeout
        self._barriers = 0

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """Gloo's monitored barrier: every rank checks in with rank 0, which waits for all of
        them within ``timeout`` (seconds, in total) and then releases them.

        Raises:
            RuntimeError: on rank 0, naming the first rank (every rank with
                ``wait_all_ranks``) that did not check in within the timeout; on the
                others, when rank 0 did not release them within the timeout.
        """
        limit = datetime.timedelta(seconds=timeout or self._timeout)
        barrier = self._barriers
        self._barriers += 1
        if self._rank != 0:
            self._store.set(f"monitored_barrier/{barrier}/{self._rank}", "1")
            try:
                self._store.wait([f"monitored_barrier/{barrier}/release"], limit)
            except RuntimeError as error:
                raise RuntimeError(f"concord: rank {self._rank} was not released from monitored_barrier "
                                   f"{barrier} by rank 0 within {limit}: {error}") from error
            return
        missing, deadline = [], time.monotonic() + limit.total_seconds()
        for rank in range(1, self._size):
            remaining = datetime.timedelta(seconds=max(deadline - time.monotonic(), 0.001))
            try:
                self._store.wait([f"monitored_barrier/{barrier}/{rank}"], remaining)
            except RuntimeError:
                missing.append(rank)
                if not wait_all_ranks:
                    break
        if missing:
            raise RuntimeError(f"concord: rank(s) {missing} failed to pass monitored_barrier {barrier} "
                               f"within {limit}")
        self._store.set(f"monitored_barrier/{barrier}/release", "1")
