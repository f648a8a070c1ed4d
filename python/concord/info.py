"""``concord-info`` (the console script pip installs) or ``python3 -m concord.info``: what
this build of Concord offers, exactly as the C++ ``concord-info`` (tools/cli/concord_info.cc,
installed by cmake and the .deb) prints it, through the binding: every CONCORD_* variable
with its current value, default, type and meaning; every registered algorithm of every
collective; the cost-model constants in effect; the CUDA status. ``--json`` prints the same
as one JSON document (schema in src/info/build_info.h), ``--version`` Concord's version."""

import argparse

from concord import _core


def main(argv=None):
    """Print the text form (default), the JSON document (``--json``) or the version
    (``--version``: "concord-info X.Y.Z"), as the C++ concord-info does.

    Args:
        argv (list of str): the arguments; ``None`` reads ``sys.argv``.
    """
    parser = argparse.ArgumentParser(prog="concord-info", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--version", action="version", version=f"concord-info {_core.__version__}")
    args = parser.parse_args(argv)
    print(_core.build_info_json() if args.json else _core.build_info_text(), end="\n" if args.json else "")


if __name__ == "__main__":
    main()
