"""Host lists of a job: ``host[:slots]`` entries as given to ``concord-run -H`` and printed
by an elastic ``--host-discovery-script`` (one parser for both, as Horovod's horovodrun has)."""


def parse_host_entry(entry, default_slots=1):
    """``(host, slots)`` of one ``host[:slots]`` entry (``default_slots`` without ``:slots``),
    or None when the host is empty or the slot count is not a positive integer. The one
    parser of -H, hostfile-free host lists and elastic discovery output."""
    host, sep, slots = entry.rpartition(":")
    if not sep:
        host, slots = entry, str(default_slots)
    if not host or not slots.isdigit() or int(slots) < 1:
        return None
    return host, int(slots)


def parse_hosts(text):
    """Parse ``host1:n1,host2:n2`` (a host without ``:n`` has 1 slot) into a list of
    ``(host, slots)``.

    Raises:
        ValueError: an empty entry or a slot count that is not a positive integer.
    """
    hosts = []
    for entry in text.split(","):
        entry = entry.strip()
        parsed = parse_host_entry(entry)
        if parsed is None:
            raise ValueError(f"concord-run: bad host entry '{entry}' in -H '{text}'; expected host:slots "
                             "with slots a positive integer")
        hosts.append(parsed)
    return hosts
