"""Readers of XRT's own sources, for the API tables of tests/data (recorded by
``python -m tests.xrt_sources RECORD XRT_GIT_DIR``) and for the test that compares the driver's
ctypes prototypes with the headers installed on this machine (tests/test_xrt_api.py); and the
check of the stand-in's rules against the sources they come from (tests/data/xrt_rules.json,
``python -m tests.xrt_sources RULES XRT_GIT_DIR``: records, for every rule source and release
tag, the path where all of the source's code fragments occur).

* :func:`c_declarations`: every exported function of a C header (``XCL_DRIVER_DLLESPEC``, from
  2.20 ``XRT_API_EXPORT``), as ``{name: [return type, [parameter types], variadic]}``: parameter
  names dropped, spacing normalised, ``const``, ``struct`` and ``enum`` kept;
* :func:`pyxrt_api`: the classes (``py::class_``, ``py::enum_``, nested ones as ``outer.inner``)
  of pyxrt.cpp, each with its ``.def``'d methods and how many overloads each has, and the module
  functions (``m.def``) under ``""``.
"""

import json
import re
import subprocess
import sys

HEADERS = ("xrt_device.h", "xrt_kernel.h", "xrt_bo.h")
#: the last release of each XRT minor version 2.12 .. 2.20 (tags of github.com/Xilinx/XRT)
TAGS = ("202120.2.12.447", "202210.2.13.479", "202220.2.14.384", "202310.2.15.225",
        "202320.2.16.204", "202410.2.17.319", "202420.2.18.179", "202510.2.19.194",
        "202520.2.20.197")
#: Debian's libxrt1 (bookworm: 202210.2.13.466+dfsg), the XRT the tests run
DEBIAN_TAG = "202210.2.13.466"
#: the releases the rules of tests/data/xrt_rules.json are looked up in
RULE_TAGS = (TAGS[0], DEBIAN_TAG, *TAGS[1:])
#: the last 2.11 release, recorded in the pyxrt table only: the last pyxrt with register access
#: (and without xclbin.get_kernels), so the table shows the parser sees those methods
PYXRT_REFERENCE_TAG = "202110.2.11.722"
HEADER_DIR = "src/runtime_src/core/include/xrt/"
PYXRT = "src/python/pybind11/src/pyxrt.cpp"


def _normal(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*\*\s*", "* ", text).strip()


def _parameter_type(text: str) -> str:
    """``const char *name`` -> ``const char*``; ``const xuid_t xclbinId`` -> ``const xuid_t``;
    a function pointer stays whole."""
    text = _normal(text)
    if "(" in text:
        return text
    words = text.replace("*", "* ").split()
    if len(words) > 1 and not words[-1].endswith("*") and words[-1] not in (
            "int", "char", "long", "short", "unsigned", "signed"):
        words = words[:-1]
    return _normal(" ".join(words))


def c_declarations(text: str) -> dict:
    """Exported function declarations of a header (comments removed)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    found = {}
    exported = r"(?:XCL_DRIVER_DLLESPEC|XRT_API_EXPORT)\s+([^;{]*?)\b(xrt\w+)\s*\(([^;{]*?)\)\s*;"
    for match in re.finditer(exported, text, flags=re.S):
        restype, name, params = match.groups()
        parts, depth, current = [], 0, ""
        for char in params:
            depth += char == "("
            depth -= char == ")"
            if char == "," and depth == 0:
                parts.append(current)
                current = ""
            else:
                current += char
        parts.append(current)
        parts = [p for p in (p.strip() for p in parts) if p and p != "void"]
        variadic = bool(parts) and parts[-1] == "..."
        if variadic:
            parts.pop()
        found[name] = [_normal(restype), [_parameter_type(p) for p in parts], variadic]
    return found


def pyxrt_api(text: str) -> dict:
    """``{class: {method: overloads}}`` of pyxrt.cpp; module functions under ``""``."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    api: dict = {"": {}}
    variables = {"m": ""}
    current = None
    for line in text.splitlines():
        declared = re.search(r"py::(class_|enum_)<[^>]*(?:<[^>]*>)?[^>]*>\s*(\w+)?\s*\(\s*(\w+)\s*,"
                             r"\s*\"(\w+)\"", line)
        if declared:
            _, variable, parent, name = declared.groups()
            outer = variables.get(parent, "")
            current = f"{outer}.{name}" if outer else name
            api.setdefault(current, {})
            if variable:
                variables[variable] = current
        else:
            start = re.match(r"\s*(\w+)\s*\.\s*def", line)
            if start and start.group(1) in variables:
                current = variables[start.group(1)]
        for method in re.findall(r"\.\s*def(?:_static|_readonly|_readwrite|_property\w*)?\s*\(\s*"
                                 r"(\"\w+\"|py::init)", line):
            name = "__init__" if method == "py::init" else method.strip('"')
            owner = "" if re.match(r"\s*m\s*\.\s*def", line) else current
            if owner is None:
                continue
            api.setdefault(owner, {})
            api[owner][name] = api[owner].get(name, 0) + 1
        for value in re.findall(r"\.\s*value\s*\(\s*\"(\w+)\"", line):
            if current is not None:
                api[current][value] = api[current].get(value, 0) + 1
    return api


def _show(git_dir: str, tag: str, path: str) -> str:
    return subprocess.run(["git", "-C", git_dir, "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def record(git_dir: str) -> None:
    """Write tests/data/xrt_c_api.json and pyxrt_api.json from a clone of Xilinx/XRT."""
    import pathlib
    data = pathlib.Path(__file__).parent / "data"
    source = "https://github.com/Xilinx/XRT, " + HEADER_DIR + "{" + ",".join(HEADERS) + "}"
    c_api = {"source": source, "releases": {}}
    py_api = {"source": "https://github.com/Xilinx/XRT, " + PYXRT, "releases": {}}
    for tag in TAGS:
        declared = {}
        for header in HEADERS:
            declared.update(c_declarations(_show(git_dir, tag, HEADER_DIR + header)))
        c_api["releases"][tag] = declared
    for tag in (PYXRT_REFERENCE_TAG, *TAGS):
        py_api["releases"][tag] = pyxrt_api(_show(git_dir, tag, PYXRT))
    (data / "xrt_c_api.json").write_text(json.dumps(c_api, indent=1, sort_keys=True) + "\n")
    (data / "pyxrt_api.json").write_text(json.dumps(py_api, indent=1, sort_keys=True) + "\n")


def _show_or_none(git_dir: str, tag: str, path: str) -> str | None:
    shown = subprocess.run(["git", "-C", git_dir, "show", f"{tag}:{path}"], capture_output=True,
                           text=True)
    return shown.stdout if shown.returncode == 0 else None


def record_rules(git_dir: str) -> None:
    """Fill in ``found`` of every rule source in tests/data/xrt_rules.json from a clone of
    Xilinx/XRT."""
    import pathlib
    path = pathlib.Path(__file__).parent / "data" / "xrt_rules.json"
    table = json.loads(path.read_text())
    for rule in table["rules"]:
        for source in rule["sources"]:
            found = {}
            for tag in RULE_TAGS:
                found[tag] = None
                for candidate in source["paths"]:
                    text = _show_or_none(git_dir, tag, candidate)
                    if text is not None and all(f in text for f in source["fragments"]):
                        found[tag] = candidate
                        break
            source["found"] = found
    path.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    commands = {"RECORD": record, "RULES": record_rules}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit("usage: python -m tests.xrt_sources RECORD|RULES XRT_GIT_DIR")
    commands[sys.argv[1]](sys.argv[2])
