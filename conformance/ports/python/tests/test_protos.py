"""The committed generated code equals a fresh `generate_protos.sh` output."""

import filecmp
import os
import shutil
import subprocess

import pytest

from conftest import PORT_DIR


@pytest.mark.skipif(not shutil.which(os.environ.get("PROTOC", "/usr/bin/protoc")), reason="protoc not installed")
def test_generated_code_is_up_to_date(tmp_path):
    subprocess.run([os.path.join(PORT_DIR, "generate_protos.sh"), str(tmp_path)], check=True)
    for name in ("kvspec_pb2.py", "conformance_pb2.py"):
        fresh = tmp_path / "spec" / name
        committed = os.path.join(PORT_DIR, "kvspec_port", "_gen", "spec", name)
        assert filecmp.cmp(fresh, committed, shallow=False), f"{name} is stale: run generate_protos.sh"
