"""Host lists of a job: ``host[:slots]`` entries as given to ``concord-run -H`` and printed
by an elastic ``--host-discovery-script`` (one parser for both, as Horovod's horovodrun has),
and MPI hostfiles (``--hostfile``) for the launcher without MPI."""


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


def parse_hostfile(path):
    """Parse an MPI hostfile (``host slots=N`` per line, as Open MPI and horovodrun take it;
    ``host`` alone has 1 slot; ``#`` comments and blank lines skipped; other ``key=value``
    words such as ``max_slots`` ignored) into a list of ``(host, slots)``.

    Raises:
        ValueError: the file cannot be read, lists no host, or a slot count is not a positive
        integer (the message names the file and line).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise ValueError(f"concord-run: cannot read hostfile '{path}': {error}") from error
    hosts = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        options = dict(word.partition("=")[::2] for word in words[1:])
        slots = options.get("slots", "1")
        if not slots.isdigit() or int(slots) < 1:
            raise ValueError(f"concord-run: hostfile '{path}' line {number}: bad slots '{slots}' in '{line.strip()}'; "
                             "expected 'host slots=N' with N a positive integer")
        hosts.append((words[0], int(slots)))
    if not hosts:
        raise ValueError(f"concord-run: hostfile '{path}' lists no host")
    return hosts
