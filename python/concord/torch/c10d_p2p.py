"""Point-to-point messages and the monitored barrier of the ``"concord"`` torch.distributed
backend, carried by the process group's c10d store.

Concord's runtime has collectives only (no tagged send/receive binding), so ``send``,
``recv``, ``recv_anysource`` and ``monitored_barrier`` travel through the store
torch.distributed hands the backend (a PrefixStore over the TCPStore / FileStore of
``init_method``): a message is one ``set`` of its bytes under a key naming sender, receiver,
tag and the sender's message count on that channel, plus an arrival record for any-source
receives. Cost: the bytes go through the store's server (rank 0's TCPStore or the file),
two store round trips per message each way; fine for control messages, not for bulk data.

Ordering follows MPI's non-overtaking rule per (sender, receiver, tag). An any-source
receive takes the oldest arrival on its tag not yet taken by a receive naming its source.
"""

import datetime
import threading
import time

import torch


def tensor_bytes(tensor):
    """The bytes of ``tensor`` (any dtype, any device, any layout) in row-major order."""
    flat = tensor.detach().reshape(-1).contiguous().cpu()
    return flat.view(torch.uint8).numpy().tobytes()


def fill_from_bytes(tensor, payload, what):
    """Copies ``payload`` (bytes from :func:`tensor_bytes`) into ``tensor``.

    Raises:
        RuntimeError: the byte counts differ (naming ``what``: sender, receiver, tag).
    """
    expected = tensor.numel() * tensor.element_size()
    if len(payload) != expected:
        raise RuntimeError(f"concord: {what}: received {len(payload)} bytes, the receiving tensor "
                           f"(shape {list(tensor.shape)}, {tensor.dtype}) holds {expected}")
    if expected == 0:
        return
    received = torch.frombuffer(bytearray(payload), dtype=torch.uint8).view(tensor.dtype).reshape(tensor.shape)
    tensor.copy_(received)


class StoreMessages:
    """Tagged messages between the ranks of one process group, through its store.

    Args:
        store: the group's c10d store (``set``, ``get``, ``add``, ``wait``, ``delete_key``).
        rank (int), size (int): this process's group rank and the group size.
        timeout (float): seconds a receive or the monitored barrier waits by default.
    """

    def __init__(self, store, rank, size, timeout):
        self._store = store
        self._rank = rank
        self._size = size
        self._timeout = timeout
        self._lock = threading.Lock()
        self._sent = {}        # (receiver, tag) -> messages sent
        self._posted = {}      # (sender, tag) -> receives posted naming sender (message index)
        self._taken = {}       # (sender, tag) -> messages taken by any-source receives
        self._arrivals = {}    # tag -> next arrival record to read
        self._barriers = 0

    def _check_peer(self, peer, what):
        if not 0 <= peer < self._size:
            raise ValueError(f"concord: {what}: rank {peer} is outside the group's ranks [0, {self._size})")
        if peer == self._rank:
            raise ValueError(f"concord: {what}: rank {peer} is this process")

    def send(self, tensor, receiver, tag):
        """Deposits ``tensor``'s bytes for ``receiver`` (returns once the store holds them)."""
        self._check_peer(receiver, "send")
        with self._lock:
            index = self._sent.get((receiver, tag), 0)
            self._sent[(receiver, tag)] = index + 1
        self._store.set(f"p2p/{self._rank}/{receiver}/{tag}/{index}", tensor_bytes(tensor))
        arrival = self._store.add(f"p2p/arrivals/{receiver}/{tag}", 1)
        self._store.set(f"p2p/arrival/{receiver}/{tag}/{arrival}", f"{self._rank} {index}")

    def post_recv(self, sender, tag):
        """Reserves the next message of ``sender`` on ``tag`` (at the call, so receives
        posted in order take messages in order); returns its index."""
        self._check_peer(sender, "recv")
        with self._lock:
            index = self._posted.get((sender, tag), 0) + self._taken.get((sender, tag), 0)
            self._posted[(sender, tag)] = self._posted.get((sender, tag), 0) + 1
            return index

    def recv(self, tensor, sender, tag, index, timeout=None):
        """Blocks until message ``index`` of ``sender`` on ``tag`` is there and copies it
        into ``tensor``.

        Raises:
            RuntimeError: the store's wait timed out, or the sizes differ.
        """
        key = f"p2p/{sender}/{self._rank}/{tag}/{index}"
        self._store.wait([key], datetime.timedelta(seconds=timeout or self._timeout))
        payload = self._store.get(key)
        self._store.delete_key(key)
        fill_from_bytes(tensor, payload, f"recv from rank {sender} (tag {tag}) on rank {self._rank}")

    def recv_any(self, tensor, tag, timeout=None):
        """Receives the oldest message on ``tag`` from any rank not yet taken by another
        receive; returns its sender's group rank."""
        with self._lock:  # any-source receives read the arrival records one at a time
            while True:
                cursor = self._arrivals.get(tag, 1)
                key = f"p2p/arrival/{self._rank}/{tag}/{cursor}"
                self._store.wait([key], datetime.timedelta(seconds=timeout or self._timeout))
                sender, index = (int(v) for v in self._store.get(key).decode().split())
                self._store.delete_key(key)
                self._arrivals[tag] = cursor + 1
                claimed = self._posted.get((sender, tag), 0) + self._taken.get((sender, tag), 0)
                if index >= claimed:  # not reserved by a receive naming its sender
                    self._taken[(sender, tag)] = self._taken.get((sender, tag), 0) + 1
                    break
        self.recv(tensor, sender, tag, index, timeout)
        return sender

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
