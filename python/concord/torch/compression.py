"""Gradient compression for allreduce, as in ``horovod.torch.Compression``."""

import torch


class NoneCompressor:
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor):
        """Return ``(tensor, None)``."""
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        """Return ``tensor``."""
        return tensor


class FP16Compressor:
    """Sends floating-point tensors as float16 (halving the bytes on the wire) and casts
    the result back to the original dtype; other dtypes pass unchanged."""

    @staticmethod
    def compress(tensor):
        """Return ``(tensor as float16, original dtype)``."""
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        """Cast back to the dtype recorded by ``compress``."""
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    """Available compressors: ``Compression.none`` and ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
