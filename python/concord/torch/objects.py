"""Collectives on arbitrary Python objects (``horovod.torch.broadcast_object`` and
``allgather_object``): the object is serialised with cloudpickle when it is importable
(lambdas, local classes), else with the standard pickle, and its bytes travel as a uint8
tensor after an int64 tensor holding their length.
"""

import pickle

import torch

from concord import _core
from concord.torch import collectives

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the installation
    _pickler = pickle


def _dumps(obj):
    return torch.frombuffer(bytearray(_pickler.dumps(obj)), dtype=torch.uint8)


def _loads(payload):
    return pickle.loads(payload.numpy().tobytes())  # cloudpickle's output is read by pickle


def _set_kwargs(process_set):
    """Keyword arguments for the tensor collectives: none for the global set."""
    return {} if process_set is None else {"process_set": process_set}


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Return root_rank's ``obj`` on every rank (of ``process_set``).

    Two broadcasts: the byte length (int64 [1]), then the bytes (uint8).

    Args:
        obj: any object cloudpickle (or pickle) can serialise; only root_rank's is read.
        root_rank (int): GLOBAL rank whose object is returned; with ``process_set`` it must
            be one of the set's ranks (as Horovod: ``rank() == root_rank`` picks the root).
        name (str, optional): prefix of the two broadcasts' tensor names (default
            ``broadcast_object``); the same on every rank.
        process_set (ProcessSet, optional): the ranks taking part (default: all).

    Returns:
        root_rank's object (the object itself on the root, a deserialised copy elsewhere).

    Raises:
        InvalidArgumentError: root_rank out of range or not in ``process_set``; this
            rank not in ``process_set``.
        MismatchError: ranks disagree on the root.
        pickle.PicklingError: on the root, if ``obj`` cannot be serialised.
    """
    name = name or "broadcast_object"
    kwargs = _set_kwargs(process_set)
    is_root = _core.rank() == root_rank  # a global rank, with or without a process set
    if is_root:
        payload = _dumps(obj)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    collectives.broadcast_(length, root_rank, name=f"{name}.length", **kwargs)
    if not is_root:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    collectives.broadcast_(payload, root_rank, name=f"{name}.data", **kwargs)
    return obj if is_root else _loads(payload)


def allgather_object(obj, name=None, process_set=None):
    """Return the list of every rank's ``obj``, in rank order (of ``process_set``).

    Two allgathers: the byte lengths (int64, one per rank), then the bytes (uint8, each
    rank contributing its own length).

    Args:
        obj: any object cloudpickle (or pickle) can serialise; may differ between ranks.
        name (str, optional): prefix of the two allgathers' tensor names (default
            ``allgather_object``); the same on every rank.
        process_set (ProcessSet, optional): the ranks taking part (default: all).

    Returns:
        list: one object per rank of ``process_set`` (default: the world); entry i is the
        object of the set's i-th rank, i.e. of global rank ``process_set.ranks[i]`` (this
        rank's entry is a deserialised copy too, as Horovod).

    Raises:
        InvalidArgumentError: this rank is not in ``process_set``.
    """
    name = name or "allgather_object"
    kwargs = _set_kwargs(process_set)
    payload = _dumps(obj)
    lengths = collectives.allgather(torch.tensor([payload.numel()], dtype=torch.int64), name=f"{name}.length",
                                **kwargs)
    gathered = collectives.allgather(payload, name=f"{name}.data", **kwargs)
    result, offset = [], 0
    for length in lengths.tolist():
        result.append(_loads(gathered[offset:offset + length]))
        offset += length
    return result
