"""Elastic training, framework-independent: the store protocol between concord-run's
elastic driver and its workers (protocol), a worker's membership of the changing worlds
(worker), Horovod's State/ObjectState and run loop (state), and the driver (driver).
concord.torch.elastic is the PyTorch API (docs/elastic.md)."""
