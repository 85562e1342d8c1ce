"""Compile a tree of .proto files into committed gRPC/protobuf stubs.

A proto lives with the package that serves it; each such package declares one
:class:`ProtoTree` (its folder of ``heliostat/<api>/v1/*.proto`` files, where the stubs go,
and the Python package they import as):

- ``southbound.grpc_native.proto.TREE``: ``heliostat.southbound.v1`` (the device API);
- ``controller.northbound.proto.TREE``: ``heliostat.controller.v1`` (the northbound API);
- ``southbound.standard.proto.TREE``: the standard protocols' own protos (P4Runtime and gNMI,
  copied unchanged from their projects: ``southbound/standard/proto/PROVENANCE.md``).

Usage: ``python -m southbound.grpc_native.proto``, ``python -m controller.northbound.proto`` and
``python -m southbound.standard.proto`` (``make protos`` runs them). Every package under the
tree's top folders (``heliostat/``; ``p4/``, ``gnmi/``, ``gnmi_ext/``) is compiled with
the tree's root as the include path, so descriptors carry the package path
(``heliostat/southbound/v1/ocs.proto``), as server reflection expects. The stubs go to the
same path under ``<root>/gen/``; their imports are rewritten to ``<import package>.gen.heliostat...``
so they import without touching ``sys.path``. ``google/rpc/*.proto`` comes from the
``googleapis-common-protos`` package (its include path and its modules). A test per tree
regenerates into a temporary folder and fails on any difference from the committed stubs.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)


class ProtoCompileError(RuntimeError):
    """protoc reported an error."""


@dataclass(frozen=True)
class ProtoTree:
    """``root/<top>/**.proto`` compiled into ``root/gen``, importable as ``package.gen``."""

    root: Path
    package: str  # the Python package of ``root`` (``southbound.grpc_native.proto``)
    tops: tuple[str, ...] = ("heliostat",)  # the top folders whose .proto files are compiled

    @property
    def out(self) -> Path:
        return self.root / "gen"

    @property
    def import_prefix(self) -> str:
        return f"{self.package}.gen."

    def proto_files(self) -> list[Path]:
        """The .proto files, relative to ``root``, in a stable order."""
        found = (p for top in self.tops for p in (self.root / top).rglob("*.proto"))
        return sorted(p.relative_to(self.root) for p in found)

    def package_dirs(self) -> list[Path]:
        """The folders holding .proto files, relative to ``root`` (``heliostat/southbound/v1``)."""
        return sorted({p.parent for p in self.proto_files()})


def _rewrite_imports(text: str, prefix: str, tops: tuple[str, ...]) -> str:
    for top in tops:
        text = re.sub(rf"^from {top}\.", f"from {prefix}{top}.", text, flags=re.M)
        text = re.sub(rf"^from {top} import", f"from {prefix.rstrip('.')}.{top} import", text, flags=re.M)
    return text


def _googleapis_protos() -> Path:
    """The folder holding ``google/rpc/status.proto`` (googleapis-common-protos)."""
    spec = importlib.util.find_spec("google.rpc.status_pb2")
    if spec is None or spec.origin is None:
        raise ProtoCompileError("google/rpc/status.proto not found: install googleapis-common-protos")
    return Path(spec.origin).resolve().parents[2]


def regenerate(tree: ProtoTree, out_dir: Path | None = None) -> list[Path]:
    """Compile every proto of ``tree`` into ``out_dir`` (default: the tree's own ``gen``);
    return the files written (relative to ``out_dir``)."""
    from grpc_tools import protoc  # imported here: grpcio-tools is a dev dependency

    out_dir = tree.out if out_dir is None else out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{tree.root}",
        f"-I{well_known}",
        f"-I{_googleapis_protos()}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *(str(p) for p in tree.proto_files()),
    ]
    status = protoc.main(args)
    if status != 0:
        raise ProtoCompileError(f"protoc failed with status {status}: {' '.join(args)}")
    written: set[Path] = set()
    for package_dir in tree.package_dirs():
        for generated in sorted((out_dir / package_dir).glob("*_pb2*.py*")):
            generated.write_text(_rewrite_imports(generated.read_text(), tree.import_prefix, tree.tops))
            written.add(generated.relative_to(out_dir))
        # Make every level a regular package.
        for i in range(len(package_dir.parts) + 1):
            init = out_dir / Path(*package_dir.parts[:i]) / "__init__.py"
            init.write_text(f'"""Generated from {tree.package} by {__name__}; do not edit."""\n')
            written.add(init.relative_to(out_dir))
    return sorted(written)


def main(tree: ProtoTree, argv: list[str] | None = None) -> int:
    """The command line of one tree's ``python -m <package>``."""
    parser = argparse.ArgumentParser(description=f"Regenerate the stubs of {tree.package}.")
    parser.add_argument("--out", type=Path, default=tree.out, help="output directory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        written = regenerate(tree, args.out)
    except ProtoCompileError as exc:
        log.error("%s", exc)
        return 1
    log.info("wrote %d files under %s", len(written), args.out)
    return 0
