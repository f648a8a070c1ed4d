"""``ProcessGroupConcord``: the torch.distributed ProcessGroup of the ``"concord"`` backend
(torch 1.13's ``c10d::ProcessGroup`` API, subclassed from Python), every call mapped onto
Concord's runtime.

Naming: c10d calls collectives in the same order on every member of a group and without
names; concord.torch.c10d_names names each call after the group's calls before it (the
same name on every member, repeated every iteration of a loop, never twice in flight), so
Concord negotiates it like any named tensor: a rank calling another collective, shape,
dtype or op at the same position gets Concord's MismatchError (naming tensor, ranks and
what differed) on every rank; the response cache hits for calls repeated in a loop; fusion,
measured algorithm selection, the timeline and the stall inspector apply.

What each call costs in Concord's collectives (P ranks, n bytes per rank):

================================  ===================================================
allreduce (SUM AVG MIN MAX PROD)  one allreduce, in place
allreduce (BAND BOR BXOR)         allgather (P*n bytes received) + local fold
allreduce_coalesced               one grouped allreduce (negotiated and fused together)
broadcast                         one broadcast
allgather, _allgather_base        one allgather
allgather_coalesced               one grouped allgather
gather / scatter                  one alltoall moving only the root's rows
reduce                            one allreduce (non-roots reduce into a scratch copy)
reduce_scatter (SUM AVG)          one reduce-scatter of the stacked inputs
reduce_scatter (other ops)        an allreduce of the stacked inputs (P*n bytes)
alltoall_base, alltoall           one alltoall (uneven splits allowed)
barrier                           a 1-byte allreduce, done after the group's earlier calls
send, recv, recv_anysource        one transport message (the group's P2pChannel, c10d_p2p)
monitored_barrier                 through the c10d store (Gloo's protocol)
================================  ===================================================

One tensor per process and call (Gloo's multi-tensor forms are for several devices per
process). dtypes: every dtype Concord carries, plus complex (as pairs of reals; SUM/AVG)
and bool (reductions as uint8 logical and/or).
"""

import torch
from torch._C._distributed_c10d import ProcessGroup

from concord.torch import collectives, handles
from concord.torch.c10d_names import CallNames
from concord.torch.c10d_p2p import ChannelMessages, StoreBarrier
from concord.torch.c10d_tensors import (BITWISE_OPS, CONCORD_OPS, SCATTER_OPS, check_like, concord_op, flat,
                                        one_tensor, reduce_op, unwire, wire, wire_width)
from concord.torch.c10d_work import Completer, ConcordWork, seconds, synchronize
from concord.torch.handles import Sum


def _write(tensor, result):
    """Copies ``result`` into ``tensor`` unless it already is ``tensor``'s memory."""
    if not (tensor.is_contiguous() and result.data_ptr() == tensor.data_ptr()):
        tensor.copy_(result)


class ProcessGroupConcord(ProcessGroup):
    """The ranks of one torch.distributed group, on Concord's runtime.

    Args:
        rank (int), size (int): this process's rank in the group and the group size.
        ranks (list of int): the group's global ranks (rank i of the group is ranks[i]).
        process_set (concord.ProcessSet or None): Concord's set of those ranks (None: the
            world).
        group_name (str): the group's name, the same on every member (c10d's group id).
        store: the group's c10d store (the monitored barrier).
        channel (concord._core.P2pChannel): the group's point-to-point channel (send/recv).
        timeout (datetime.timedelta): how long a call waits by default.
        callbacks (CallbackPool): completes the futures.
    """

    def __init__(self, rank, size, ranks, process_set, group_name, store, channel, timeout, callbacks):
        super().__init__(rank, size)
        self._ranks = list(ranks)
        self._set = process_set
        self._group = group_name
        self._where = f" of group '{group_name}' (rank {rank} of {size})"  # ends every work's description
        self._timeout = seconds(timeout, 1800.0)
        self._callbacks = callbacks
        self._completer = Completer(group_name)
        self._messages = ChannelMessages(channel, self._timeout, callbacks)
        self._barrier = StoreBarrier(store, rank, size, self._timeout)
        self._names = CallNames(group_name, self._timeout)

    def getBackendName(self):
        """``"concord"`` (what ``dist.get_backend`` and DDP's logging report)."""
        return "concord"

    def __del__(self):
        completer = getattr(self, "_completer", None)
        if completer is not None:
            completer.close()
        messages = getattr(self, "_messages", None)
        if messages is not None:
            messages.close()

    # -- plumbing -------------------------------------------------------------------------

    def _work(self, what):
        return ConcordWork(what + self._where, self._timeout, self._callbacks)

    def _start(self, what, signature, launch):
        """Names the group's next call (``signature``: what every member computes alike,
        c10d_names.CallNames.named), submits it with ``launch(name)`` (returns a handle of
        concord.torch.handles) and returns ``(name, handle, work)``."""
        with self._names.named(signature, what) as call:
            handle = launch(call.name)
            call.handle = handles.runtime_handle(handle)
        return call.name, handle, self._work(f"{what} '{call.name}' (call {call.position})")

    def _group_root(self, root, what):
        if not 0 <= root < self.size():
            raise ValueError(f"concord: {what}: root rank {root} is outside the group's ranks [0, {self.size()})")
        return self._ranks[root]

    def _reduce_launch(self, tensor, op, what, signature, in_place=True):
        """Starts the reduction of ``tensor`` over the group; returns its Work and a
        callable that waits and returns the result (``tensor``'s dtype and shape;
        ``tensor``'s own memory when ``in_place`` and ``tensor`` is contiguous)."""
        cop = concord_op(op, tensor, what)
        if cop is None:  # bitwise: every rank's values, folded here
            _, handle, work = self._start(what, signature, lambda name: collectives.allgather_async(
                flat(tensor), name=name, process_set=self._set))
            fold = BITWISE_OPS[op]

            def wait_folded():
                rows = synchronize(handle)
                result = rows[0]
                for row in rows[1:]:
                    result = fold(result, row)
                return unwire(result, tensor)
            return work, wait_folded
        staged = wire(tensor) if in_place else wire(tensor).clone()
        _, handle, work = self._start(what, signature, lambda name: collectives.allreduce_async_(
            staged, name=name, op=cop, process_set=self._set))

        def wait_reduced():
            synchronize(handle)
            return unwire(staged, tensor)
        return work, wait_reduced

    # -- reductions -----------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        """Reduces the tensor over the group in place (ops: SUM, AVG, MIN, MAX, PRODUCT,
        BAND, BOR, BXOR). Returns a Work whose result is ``[tensor]``."""
        tensor = one_tensor(tensors, "allreduce")
        op = reduce_op(opts)
        work, wait = self._reduce_launch(tensor, op, "allreduce", ("allreduce", tensor.dtype, tensor.shape, op))

        def complete():
            _write(tensor, wait())
            return [tensor]
        return self._completer.submit(work, complete)

    def allreduce_coalesced(self, tensors, opts=None):
        """Reduces every tensor of the list in place, as one group negotiated and fused
        together (one dtype; SUM, AVG, MIN, MAX, PRODUCT)."""
        tensors = list(tensors)
        if not tensors:
            raise ValueError("concord: allreduce_coalesced of an empty list")
        check_like([t for t in tensors if t.dtype != tensors[0].dtype], tensors[0], "allreduce_coalesced")
        op = reduce_op(opts)
        cop = concord_op(op, tensors[0], "allreduce_coalesced")
        if cop is None:
            raise ValueError("concord: allreduce_coalesced: bitwise ops are reduced per tensor; call allreduce "
                             "for each")
        staged = [wire(t) for t in tensors]
        signature = ("allreduce_coalesced", tensors[0].dtype, tuple(t.shape for t in tensors), op)
        _, handle, work = self._start("allreduce_coalesced", signature, lambda name: (
            collectives.grouped_allreduce_async_(staged, name=name, op=cop, process_set=self._set)))

        def complete():
            synchronize(handle)
            for tensor, values in zip(tensors, staged):
                _write(tensor, unwire(values, tensor))
            return tensors
        return self._completer.submit(work, complete)

    def reduce(self, tensors, opts):
        """Reduces the tensor into the root's (``opts.rootRank``); the other ranks' tensors
        are left unchanged (an allreduce into a scratch copy)."""
        tensor = one_tensor(tensors, "reduce")
        self._group_root(opts.rootRank, "reduce")
        is_root = opts.rootRank == self.rank()
        op = reduce_op(opts)
        signature = ("reduce", tensor.dtype, tensor.shape, op, opts.rootRank)
        work, wait = self._reduce_launch(tensor, op, "reduce", signature, in_place=is_root)

        def complete():
            result = wait()
            if is_root:
                _write(tensor, result)
            return [tensor]
        return self._completer.submit(work, complete)

    def _scatter_reduced(self, output, stacked, op, what):
        """Starts the reduction of ``stacked`` ([P, k], ``output``'s dtype) whose row r
        rank r receives into ``output``; returns the submitted Work."""
        signature = (what, output.dtype, output.shape, op)
        if op in SCATTER_OPS and output.dtype != torch.bool:
            _, handle, work = self._start(what, signature, lambda name: collectives.reducescatter_async(
                wire(stacked), name=name, op=CONCORD_OPS[op], process_set=self._set))

            def complete():
                _write(output, unwire(synchronize(handle), output))
                return [output]
        else:  # MIN, MAX, PRODUCT, bool, bitwise: reduce everything, keep this rank's row
            work, wait = self._reduce_launch(stacked, op, what, signature, in_place=False)

            def complete():
                _write(output, wait()[self.rank()].reshape(output.shape))
                return [output]
        return self._completer.submit(work, complete)

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        """Reduces ``input_lists[0]`` (one tensor per rank, like the output) over the group;
        rank r receives the reduction of everyone's r-th tensor."""
        output = one_tensor(output_tensors, "reduce_scatter")
        inputs = list(one_tensor(input_lists, "reduce_scatter")) if input_lists else []
        if len(inputs) != self.size():
            raise ValueError(f"concord: reduce_scatter: {len(inputs)} inputs, the group has {self.size()} ranks")
        check_like(inputs, output, "reduce_scatter")
        stacked = torch.stack([t.reshape(-1) for t in inputs])
        return self._scatter_reduced(output, stacked, reduce_op(opts), "reduce_scatter")

    def _reduce_scatter_base(self, output, input, opts=None):
        """reduce_scatter with the inputs concatenated in one tensor of size*output.numel()
        elements (dist.reduce_scatter_tensor)."""
        if input.dtype != output.dtype or input.numel() != self.size() * output.numel():
            raise ValueError(f"concord: _reduce_scatter_base: input {list(input.shape)} {input.dtype} must hold "
                             f"{self.size()} x output {list(output.shape)} {output.dtype}")
        return self._scatter_reduced(output, input.reshape(self.size(), -1), reduce_op(opts), "_reduce_scatter_base")

    # -- data movement --------------------------------------------------------------------

    def broadcast(self, tensors, opts=None):
        """Copies the root's (``opts.rootRank``) tensor into every rank's, in place."""
        tensor = one_tensor(tensors, "broadcast")
        root = 0 if opts is None else opts.rootRank
        global_root = self._group_root(root, "broadcast")
        staged = wire(tensor)
        _, handle, work = self._start("broadcast", ("broadcast", tensor.dtype, tensor.shape, root),
                                      lambda name: collectives.broadcast_async_(staged, global_root, name=name,
                                                                                process_set=self._set))

        def complete():
            synchronize(handle)
            _write(tensor, unwire(staged, tensor))
            return [tensor]
        return self._completer.submit(work, complete)

    def allgather(self, output_lists, input_tensors, opts=None):
        """``output_lists[0][r]`` receives rank r's tensor (same dtype and size on every
        rank)."""
        tensor = one_tensor(input_tensors, "allgather")
        outputs = list(one_tensor(output_lists, "allgather"))
        if len(outputs) != self.size():
            raise ValueError(f"concord: allgather: {len(outputs)} outputs, the group has {self.size()} ranks")
        check_like(outputs, tensor, "allgather")
        _, handle, work = self._start("allgather", ("allgather", tensor.dtype, tensor.shape), lambda name: (
            collectives.allgather_async(flat(tensor), name=name, process_set=self._set)))

        def complete():
            for output, row in zip(outputs, synchronize(handle)):
                output.copy_(unwire(row, output))
            return [outputs]
        return self._completer.submit(work, complete)

    def _allgather_base(self, output, input, opts=None):
        """``output`` (size * input.numel() elements) receives every rank's input in rank
        order (dist.all_gather_into_tensor)."""
        if input.dtype != output.dtype or output.numel() != self.size() * input.numel():
            raise ValueError(f"concord: _allgather_base: output {list(output.shape)} {output.dtype} must hold "
                             f"{self.size()} x input {list(input.shape)} {input.dtype}")
        _, handle, work = self._start("_allgather_base", ("_allgather_base", input.dtype, input.shape), lambda name: (
            collectives.allgather_async(flat(input), name=name, process_set=self._set)))

        def complete():
            output.copy_(unwire(synchronize(handle), output))
            return [output]
        return self._completer.submit(work, complete)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """``output_lists[r][i]`` receives rank r's ``input_list[i]``; one grouped
        allgather."""
        inputs = list(input_list)
        if len(output_lists) != self.size() or any(len(row) != len(inputs) for row in output_lists):
            raise ValueError(f"concord: allgather_coalesced: output_lists must hold {self.size()} lists of "
                             f"{len(inputs)} tensors")
        for row in output_lists:
            for output, tensor in zip(row, inputs):
                check_like([output], tensor, "allgather_coalesced")
        signature = ("allgather_coalesced", tuple(t.dtype for t in inputs), tuple(t.shape for t in inputs))
        _, handle, work = self._start("allgather_coalesced", signature, lambda name: (
            collectives.grouped_allgather_async([flat(t) for t in inputs], name=name, process_set=self._set)))

        def complete():
            for i, gathered in enumerate(synchronize(handle)):
                for rank, row in enumerate(output_lists):
                    row[i].copy_(unwire(gathered[rank], row[i]))
            return output_lists
        return self._completer.submit(work, complete)

    def gather(self, output_lists, input_tensors, opts):
        """The root (``opts.rootRank``) receives every rank's tensor in
        ``output_lists[0]``; one alltoall in which only the root receives."""
        tensor = one_tensor(input_tensors, "gather")
        root = opts.rootRank
        self._group_root(root, "gather")
        outputs = list(one_tensor(output_lists, "gather")) if root == self.rank() else []
        if root == self.rank():
            if len(outputs) != self.size():
                raise ValueError(f"concord: gather: {len(outputs)} outputs on the root, the group has "
                                 f"{self.size()} ranks")
            check_like(outputs, tensor, "gather")
        splits = [0] * self.size()
        splits[root] = 1
        _, handle, work = self._start("gather", ("gather", tensor.dtype, tensor.shape, root), lambda name: (
            collectives.alltoall_async(flat(tensor), splits, name=name, process_set=self._set)))

        def complete():
            rows, _ = synchronize(handle)
            for output, row in zip(outputs, rows):
                output.copy_(unwire(row, output))
            return [outputs]
        return self._completer.submit(work, complete)

    def scatter(self, output_tensors, input_lists, opts):
        """Rank r receives the root's ``input_lists[0][r]`` into its output; one alltoall in
        which only the root sends."""
        output = one_tensor(output_tensors, "scatter")
        root = opts.rootRank
        self._group_root(root, "scatter")
        if root == self.rank():
            inputs = list(one_tensor(input_lists, "scatter"))
            if len(inputs) != self.size():
                raise ValueError(f"concord: scatter: {len(inputs)} inputs on the root, the group has "
                                 f"{self.size()} ranks")
            check_like(inputs, output, "scatter")
            source, splits = torch.cat([flat(t) for t in inputs]), [1] * self.size()
        else:
            source, splits = flat(output)[:0], [0] * self.size()
        _, handle, work = self._start("scatter", ("scatter", output.dtype, output.shape, root), lambda name: (
            collectives.alltoall_async(source, splits, name=name, process_set=self._set)))

        def complete():
            rows, _ = synchronize(handle)
            _write(output, unwire(rows, output))
            return [output]
        return self._completer.submit(work, complete)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        """Rows of ``input`` (dim 0) go to the ranks by ``input_split_sizes`` (empty: equal
        parts); ``output`` receives, in rank order, the rows every rank sent here, which
        must match ``output_split_sizes`` when given."""
        splits = list(input_split_sizes) or None
        # the shapes may differ between ranks (uneven splits): the signature holds what every rank shares
        name, handle, work = self._start("alltoall_base", ("alltoall_base", input.dtype), lambda name: (
            collectives.alltoall_async(wire(input), splits, name=name, process_set=self._set)))
        expected = list(output_split_sizes)

        def complete():
            received, rows = synchronize(handle)
            rows = rows.tolist()
            if expected and rows != expected:
                raise RuntimeError(f"concord: alltoall_base '{name}' on rank {self.rank()}: received rows {rows} "
                                   f"from the ranks, output_split_sizes says {expected}")
            if received.numel() != wire_width(output):
                raise RuntimeError(f"concord: alltoall_base '{name}' on rank {self.rank()}: received "
                                   f"{sum(rows)} rows, output has shape {list(output.shape)}")
            _write(output, unwire(received, output))
            return [output]
        return self._completer.submit(work, complete)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        """``input_tensors[j]`` goes to rank j, ``output_tensors[j]`` receives rank j's
        (sizes may differ by rank; one dtype)."""
        inputs, outputs = list(input_tensors), list(output_tensors)
        if len(inputs) != self.size() or len(outputs) != self.size():
            raise ValueError(f"concord: alltoall: {len(inputs)} inputs and {len(outputs)} outputs, the group has "
                             f"{self.size()} ranks")
        check_like([t for t in inputs + outputs if t.dtype != inputs[0].dtype], inputs[0], "alltoall")
        source = torch.cat([flat(t).reshape(-1) for t in inputs])
        name, handle, work = self._start("alltoall", ("alltoall", inputs[0].dtype), lambda name: (
            collectives.alltoall_async(source, [wire_width(t) for t in inputs], name=name, process_set=self._set)))

        def complete():
            received, counts = synchronize(handle)
            counts = counts.tolist()
            wanted = [wire_width(t) for t in outputs]
            if counts != wanted:
                raise RuntimeError(f"concord: alltoall '{name}' on rank {self.rank()}: received {counts} elements "
                                   f"from the ranks, the outputs hold {wanted}")
            for output, part in zip(outputs, torch.split(received, counts)):
                output.copy_(unwire(part, output))
            return outputs
        return self._completer.submit(work, complete)

    def barrier(self, opts=None):
        """Done when every member reached it and this group's earlier calls finished here."""
        token = torch.zeros(1, dtype=torch.uint8)
        _, handle, work = self._start("barrier", ("barrier",), lambda name: (
            collectives.allreduce_async_(token, name=name, op=Sum, process_set=self._set)))
        return self._completer.submit(work, lambda: (synchronize(handle), [])[1])

    # -- point to point (over the group's transport channel) -----------------------------

    def send(self, tensors, dst_rank, tag=0):
        """Sends the tensor to group rank ``dst_rank`` with ``tag`` (done once it may be
        reused)."""
        return self._messages.send(one_tensor(tensors, "send"), dst_rank, tag)

    def recv(self, tensors, src_rank, tag=0):
        """Receives group rank ``src_rank``'s next message on ``tag`` into the tensor (same
        byte count, else the work fails with a RuntimeError naming both)."""
        return self._messages.recv(one_tensor(tensors, "recv"), src_rank, tag)

    def recv_anysource(self, tensors, tag=0):
        """Receives the next message on ``tag`` from any rank; ``work._source_rank()``
        names the sender's group rank."""
        return self._messages.recv_any(one_tensor(tensors, "recv_anysource"), tag)

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """Gloo's monitored barrier (concord.torch.c10d_p2p.StoreBarrier.monitored_barrier),
        reached as ``group.monitored_barrier(timeout, wait_all_ranks)``."""
        self._barrier.monitored_barrier(seconds(timeout, self._timeout), wait_all_ranks)

