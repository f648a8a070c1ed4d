"""``concord-info`` (the console script pip installs) or ``python3 -m concord.info``: print
every CONCORD_* variable with its default, current value, type and meaning (the
configuration table of src/common/config.cc); ``--version`` prints Concord's version."""

import argparse

from concord import _core


def main(argv=None):
    """Print the configuration table as aligned text (default) or JSON (``--json``), or the
    version (``--version``: "concord-info X.Y.Z", as the C++ tool prints it)."""
    parser = argparse.ArgumentParser(prog="concord-info", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--version", action="version", version=f"concord-info {_core.__version__}")
    args = parser.parse_args(argv)
    rows = _core.config_table()
    if args.json:
        import json
        print(json.dumps([dict(zip(("name", "default", "type", "doc", "value"), row)) for row in rows],
                         indent=2))
        return
    width = max(len(name) for name, *_ in rows)
    for name, default, kind, doc, value in rows:
        print(f"{name:<{width}}  = {value:<12} (default {default}, {kind})\n{'':<{width}}    {doc}")


if __name__ == "__main__":
    main()
