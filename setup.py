"""What a build of the sparkprov package must make before setuptools copies the files.

pyproject.toml declares the package; this file adds the steps a wheel needs and setuptools
cannot declare:

- the protobuf and gRPC stubs (``sparkprov.v1``), generated from ``proto/`` with the
  grpcio-tools the build environment pins (pyproject's ``[build-system]``), so a wheel or an
  sdist never depends on a checkout that ran ``make setup``;
- the capture jar (``capture_agent/jars/sparkprov-capture.jar``, the JVM taps) and the viewer's
  browser libraries (``viewer/static/vendor``): package data made by Maven and npm. A build from
  a checkout makes them when they are missing (``mvn``/``npm`` on the PATH); a build from an sdist
  finds them inside it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROTOS = ("sparkprov/v1/lineage.proto", "sparkprov/v1/query.proto")
STUBS = ROOT / "sparkprov" / "v1"
JAR = ROOT / "capture_agent" / "jars" / "sparkprov-capture.jar"
VENDOR = ROOT / "viewer" / "static" / "vendor"
VENDOR_FILES = ("cytoscape.min.js", "cytoscape-dagre.min.js")


def generate_stubs() -> None:
    """``sparkprov/v1/*_pb2*.py`` and their ``.pyi`` from ``proto/``, as ``make setup`` does."""
    if not (ROOT / "proto").is_dir():  # an sdist made before the stubs existed cannot happen
        raise SystemExit("sparkprov build: proto/ is missing: build from a checkout or an sdist")
    from grpc_tools import protoc  # the build environment's, pinned in pyproject.toml

    STUBS.mkdir(parents=True, exist_ok=True)
    include = str(Path(protoc.__file__).parent / "_proto")  # google/protobuf/*.proto
    args = ["protoc", f"-I{ROOT / 'proto'}", f"-I{include}", f"--python_out={ROOT}"]
    args += [f"--pyi_out={ROOT}", f"--grpc_python_out={ROOT}"]
    if protoc.main(args + [str(ROOT / "proto" / p) for p in PROTOS]) != 0:
        raise SystemExit("sparkprov build: protoc failed on proto/sparkprov/v1")
    (STUBS / "__init__.py").touch()


def _run(command: list[str], what: str) -> None:
    tool = shutil.which(command[0])
    if tool is None:
        raise SystemExit(
            f"sparkprov build: {what} is missing and `{command[0]}` is not on the PATH: run "
            "`make setup` in the checkout first, or install it"
        )
    print(f"sparkprov build: making {what}: {' '.join(command)}", file=sys.stderr)
    subprocess.run([tool, *command[1:]], cwd=ROOT, check=True)


def ensure_package_data() -> None:
    """The capture jar and the viewer's libraries, made by Maven and npm when missing."""
    if not JAR.is_file():
        build_dir = ROOT / "build" / "capture-jvm"
        _run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                "capture_jar/pom.xml",
                "package",
                "-DskipTests",
                f"-Dbuild.dir={build_dir}",
            ],
            "the capture jar",
        )
    if not all((VENDOR / name).is_file() for name in VENDOR_FILES):
        _run(["npm", "ci", "--prefix", "viewer/web", "--no-audit", "--no-fund"], "viewer libraries")
        VENDOR.mkdir(parents=True, exist_ok=True)
        modules = ROOT / "viewer" / "web" / "node_modules"
        for package, name in (("cytoscape", VENDOR_FILES[0]), ("cytoscape-dagre", VENDOR_FILES[1])):
            shutil.copy(modules / package / "dist" / name, VENDOR / name)
            shutil.copy(modules / package / "LICENSE", VENDOR / f"{package}.LICENSE")


class BuildPy(build_py):
    """setuptools' build_py, after the stubs and the package data exist."""

    def run(self) -> None:
        if not self.editable_mode:  # `make setup` makes them for a checkout's editable install
            ensure_package_data()
        super().run()


# Before setup(): the package list (pyproject's packages.find) must see sparkprov.v1.
generate_stubs()
setup(cmdclass={"build_py": BuildPy})
