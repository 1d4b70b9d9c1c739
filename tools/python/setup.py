"""Builds kvspec._reference from this clone: the reference's sources
(cc/*.cc and cc/policies/*.cc, not the tests), spec/kvspec.proto's C++
classes (protoc --cpp_out) and binding.cc, linked with the system's Abseil
and Protobuf (pkg-config); and kvspec/_gen/spec/kvspec_pb2.py
(protoc --python_out), the Python classes of the same messages.

The compiler flags are the reference's determinism flags (.bazelrc:
-ffp-contract=off, -fno-fast-math, C++17), so the package computes what
the vectors hold; tests/test_vectors.py checks every case.
"""
import glob
import os
import shutil
import subprocess

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(HERE, "build", "gen")
PACKAGE_GEN = os.path.join(HERE, "kvspec", "_gen")


def protoc():
    if shutil.which("protoc") is None:
        raise RuntimeError("protoc is not installed: run tools/setup.sh")
    os.makedirs(GEN, exist_ok=True)
    os.makedirs(os.path.join(PACKAGE_GEN, "spec"), exist_ok=True)
    subprocess.run(["protoc", f"--proto_path={REPO}", f"--cpp_out={GEN}",
                    f"--python_out={PACKAGE_GEN}", "spec/kvspec.proto"],
                   check=True, cwd=REPO)
    for folder in (PACKAGE_GEN, os.path.join(PACKAGE_GEN, "spec")):
        open(os.path.join(folder, "__init__.py"), "a").close()


def pkg_config(*names):
    out = subprocess.run(["pkg-config", "--libs", *names], check=True,
                         capture_output=True, text=True).stdout.split()
    return out


os.chdir(HERE)
protoc()
sources = sorted(p for p in glob.glob(os.path.join(REPO, "cc", "*.cc")) +
                 glob.glob(os.path.join(REPO, "cc", "policies", "*.cc"))
                 if not p.endswith("_test.cc"))
# setuptools takes only paths inside this folder: build/cc is a link to
# the clone's cc/.
link = os.path.join(HERE, "build", "cc")
if not os.path.islink(link):
    os.symlink(os.path.join(REPO, "cc"), link)
extension = Pybind11Extension(
    "kvspec._reference",
    ["binding.cc", "build/gen/spec/kvspec.pb.cc",
     *[os.path.join("build", os.path.relpath(p, REPO)) for p in sources]],
    include_dirs=[REPO, GEN],
    cxx_std=17,
    extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math", "-w"],
    extra_link_args=[*pkg_config("absl_statusor", "absl_str_format", "absl_strings",
                                 "absl_int128"), "-lprotobuf", "-pthread"],
)
setup(ext_modules=[extension], cmdclass={"build_ext": build_ext},
      package_data={"kvspec": ["_gen/*.py", "_gen/spec/*.py", "py.typed"]})
