"""ElasticSampler: a DistributedSampler that re-shards what is left of the epoch after the
world changes (Horovod's ``hvd.elastic.ElasticSampler``)."""

import math
import random

import torch.utils.data

import concord


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions a dataset over the ranks and, after a reset, partitions the samples not
    yet processed this epoch over the new world.

    Record progress with :meth:`record_batch` after each batch, put the sampler in the
    TorchState (so commits save and resets restore its progress), and call
    :meth:`set_epoch` at the end of every epoch.

    Args:
        dataset: a map-style dataset of constant length.
        shuffle (bool): shuffle the indices, the same way on every rank (seed + epoch).
        seed (int): the shuffle seed, equal on every rank.
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset, self.shuffle, self.seed = dataset, shuffle, seed
        self.epoch = 0
        self.processed_num = 0
        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch ``epoch``: a new shuffle, nothing processed yet."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Counts one batch of ``batch_size`` samples on every rank as processed."""
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        """``{"epoch", "processed_num"}``: what a commit saves."""
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        """Restores :meth:`state_dict`'s values and re-shards for the current world."""
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self):
        """Shards the epoch's unprocessed samples over the current world (rank, size of
        Concord's runtime; a world of one before init)."""
        started = concord.is_initialized()
        self.num_replicas = concord.size() if started else 1
        self.rank = concord.rank() if started else 0
        indices = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(indices)
        self.remaining_indices = indices[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = self.remaining_indices[:]
        indices += indices[:self.total_size - len(indices)]  # pad to a multiple of the world size
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples
