"""Sphinx configuration of Concord's documentation site (scripts/docs.sh builds it).

The pages are the Markdown files of docs/ (MyST parser), the Python API reference comes
from the docstrings (autodoc, Google-style sections through napoleon) of the installed
package, and the C++ API reference from Doxygen's XML of include/concord/ (breathe).
scripts/docs.sh passes, through the environment:

* ``CONCORD_DOCS_DOXYGEN_XML``: Doxygen's XML output directory;
* ``CONCORD_DOCS_VERSION``: the CMake project version;
* the installed package on ``PYTHONPATH`` (autodoc imports ``concord``).
"""

import os
import re

from sphinx.util import logging

project = "Concord"
author = "Concord developers"
release = version = os.environ.get("CONCORD_DOCS_VERSION", "")

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "breathe"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "data", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
# Links from the Markdown pages to source files (../src/..., ../tools/...) point into the
# repository, not to documentation pages.
suppress_warnings = ["myst.xref_missing"]

autodoc_member_order = "bysource"
autodoc_preserve_defaults = True  # signatures show defaults as written (Compression.none)
napoleon_google_docstring = True
napoleon_numpy_docstring = False

breathe_projects = {"concord": os.environ.get("CONCORD_DOCS_DOXYGEN_XML", "")}
breathe_default_project = "concord"

html_theme = "alabaster"
html_title = f"Concord {release}"


def _skip_reexported(app, what, name, obj, skip, options):
    """Document the names concord.torch re-exports from concord (init, rank, the errors,
    ...) once, under concord; leave out class attributes that only alias another class
    (``Compression.none``: its class docstring names them) and constants without a
    docstring of their own (the reduce ops; docs/api/python.md lists them)."""
    del app, options
    if getattr(obj, "__module__", None) in ("concord", "concord._core") and _documenting[0] == "concord.torch":
        return True
    if what == "class" and isinstance(obj, type) and name != obj.__name__:
        return True
    # Constants (hvd.Sum, hvd.Average, ... are ints) would show their type's docstring.
    if not callable(obj) and not isinstance(obj, type) and getattr(obj, "__doc__", None) == type(obj).__doc__:
        return True
    return skip


_documenting = [None]


def _note_module(app, what, name, obj, options, lines):
    del app, obj, options, lines
    if what == "module":
        _documenting[0] = name


# A field napoleon made from a Google-style section: ":param NAME:", ":raises NAME:", where
# NAME must be names (``a, b``, dotted, ``*args``) optionally followed by a parenthesised note.
_FIELD = re.compile(r":(param|raises|keyword) ([^:]*):")
_FIELD_NAMES = re.compile(r"(\\?\*)*[\w.]+(, (\\?\*)*[\w.]+)*( \([^)]*\))?")


def _check_fields(app, what, name, obj, options, lines):
    """Warn (an error under -W) when a Google-style Args/Raises entry did not parse as one:
    a continuation line that is not indented under its entry becomes a field named by its
    first words (``:raises ranks differ between callers.:``), which renders as nonsense."""
    del app, what, obj, options
    for line in lines:
        match = _FIELD.match(line)
        if match and not _FIELD_NAMES.fullmatch(match.group(2)):
            logging.getLogger(__name__).warning(
                "docstring of %s: %s entry %r is not a name: indent its continuation lines under it "
                "(Google style), one entry per line", name, match.group(1), match.group(2))


def setup(app):
    """Sphinx hook: skip re-exported members (see _skip_reexported) and check the fields
    napoleon made (see _check_fields; runs after napoleon's handler)."""
    app.connect("autodoc-process-docstring", _note_module)
    app.connect("autodoc-process-docstring", _check_fields, priority=900)
    app.connect("autodoc-skip-member", _skip_reexported)
