"""Opens the built documentation site (scripts/docs.sh) in headless Chromium and checks that
the pages render: the index links to both API pages, the Python API page has an entry for
every public function and class of concord, concord.torch, concord.engine and
concord.kvstore, and the C++ API page one for every member of namespace concord that
Doxygen found in include/concord/. The DOM is the one Chromium built (``--dump-dom``), not
the HTML file, so a page that does not load or parse fails. Each page is also saved as a
PNG (``--screenshot``) under DOCS_DIR/screenshots/, and a blank screenshot fails.

Usage: python3 render_check.py DOCS_DIR   (DOCS_DIR = <build>/docs, holding html/ and doxygen/)
Exit status 77 (ctest's "skipped") when no Chromium is installed (Debian's chromium;
scripts/setup.sh installs it). Needs the installed package on PYTHONPATH (the expected
Python names come from the modules themselves).
"""

import html.parser
import importlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

SKIPPED = 77
BROWSERS = ("chromium", "chromium-headless-shell", "google-chrome")
PAGES = {"index": "index.html", "python": "api/python.html", "cpp": "api/cpp.html"}
PYTHON_MODULES = ("concord", "concord.torch", "concord.engine", "concord.kvstore")


class _Dom(html.parser.HTMLParser):
    """The ids, link targets and signature names (``<span class="sig-name">``) of a DOM."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.sig_names = set(), set(), set()
        self._depth_in_sig = 0
        self._text = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "href" in attrs:
            self.links.add(attrs["href"].split("#")[0])
        if self._depth_in_sig:
            self._depth_in_sig += 1
        elif "sig-name" in (attrs.get("class") or "").split():
            self._depth_in_sig, self._text = 1, []

    def handle_endtag(self, tag):
        del tag
        if self._depth_in_sig:
            self._depth_in_sig -= 1
            if not self._depth_in_sig:
                self.sig_names.add("".join(self._text).strip())

    def handle_data(self, data):
        if self._depth_in_sig:
            self._text.append(data)


def _missing_doc_tools():
    """The Debian packages scripts/docs.sh needs that are not installed, as text ('' if none)."""
    missing = [] if shutil.which("doxygen") else ["doxygen"]
    for module, package in (("sphinx", "python3-sphinx"), ("breathe", "python3-breathe"),
                            ("myst_parser", "python3-myst-parser")):
        if importlib.util.find_spec(module) is None:
            missing.append(package)
    return " ".join(missing)


def _chromium(browser, profile, url, *flags):
    """Run headless Chromium on url with flags; return its stdout. Fails on a non-zero exit."""
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={profile}", *flags, url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    if result.returncode != 0:
        sys.exit(f"render_check: {' '.join(command)} exited with {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def _expected_python_ids():
    """{module.name: the DOM ids that document it}: every public function and class (the
    module's __all__, else what it defines); a name concord.torch re-exports from concord
    is documented under concord (docs/conf.py)."""
    expected = {}
    for module_name in PYTHON_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [
            name for name, obj in vars(module).items()
            if not name.startswith("_") and getattr(obj, "__module__", "").startswith(module_name)]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                continue  # constants (hvd.Sum, ...): docs/api/python.md lists them in prose
            home = getattr(obj, "__module__", module_name)
            own = getattr(obj, "__name__", name)  # an alias (HorovodInternalError) under its class's name
            ids = {f"{module_name}.{name}", f"{module_name}.{own}"}
            if home in ("concord", "concord._core"):
                ids |= {f"concord.{name}", f"concord.{own}"}
            expected[f"{module_name}.{name}"] = ids
    return expected


def _expected_cpp_names(doxygen_xml):
    """The short names of namespace concord's members and classes in Doxygen's XML."""
    root = ElementTree.parse(os.path.join(doxygen_xml, "namespaceconcord.xml")).getroot()
    names = {member.findtext("name") for member in root.iter("memberdef")
             if member.get("kind") in ("function", "enum", "typedef", "variable")}
    names |= {inner.text.split("::")[-1] for inner in root.iter("innerclass")}
    return names


def _check_screenshot(path):
    """Fail unless path is a PNG that is not one flat colour (a page that rendered text)."""
    import matplotlib.image  # python3-matplotlib; imported here so --help works without it
    pixels = matplotlib.image.imread(path)
    dark = (pixels[:, :, :3].mean(axis=2) < 0.5).mean()
    if dark < 0.002:
        sys.exit(f"render_check: {path} looks blank ({dark:.4%} dark pixels)")
    return pixels.shape[1], pixels.shape[0], dark


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.exit(__doc__)
    docs = os.path.abspath(argv[1])
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    if browser is None:
        print(f"render_check: SKIPPED, no headless Chromium ({', '.join(BROWSERS)}); install Debian's "
              "chromium (scripts/setup.sh does)")
        return SKIPPED
    shots = os.path.join(docs, "screenshots")
    os.makedirs(shots, exist_ok=True)
    doms = {}
    with tempfile.TemporaryDirectory(prefix="concord-docs-chromium-") as profile:
        for page, relative in PAGES.items():
            path = os.path.join(docs, "html", relative)
            if not os.path.isfile(path):
                missing = _missing_doc_tools()
                if missing:  # docs.build was skipped for the same reason
                    print(f"render_check: SKIPPED, no site to open: {path} was not built, missing {missing}")
                    return SKIPPED
                sys.exit(f"render_check: {path} is missing: run scripts/docs.sh")
            url = "file://" + path
            doms[page] = _Dom()
            doms[page].feed(_chromium(browser, profile, url, "--dump-dom"))
            png = os.path.join(shots, f"{page}.png")
            _chromium(browser, profile, url, f"--screenshot={png}", "--window-size=1280,1600")
            width, height, dark = _check_screenshot(png)
            print(f"{relative}: {len(doms[page].ids)} ids, {len(doms[page].sig_names)} signatures; "
                  f"{png} {width}x{height}, {dark:.1%} dark pixels")

    failures = [f"index.html does not link to {target}" for target in ("api/python.html", "api/cpp.html")
                if target not in doms["index"].links]
    python_ids = doms["python"].ids
    failures += [f"api/python.html has no entry for {name} (looked for ids {sorted(ids)})"
                 for name, ids in sorted(_expected_python_ids().items()) if not ids & python_ids]
    failures += [f"api/cpp.html has no signature named {name} (Doxygen lists it in namespace concord)"
                 for name in sorted(_expected_cpp_names(os.path.join(docs, "doxygen", "xml")))
                 if name not in doms["cpp"].sig_names]
    for failure in failures:
        print("render_check: FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
