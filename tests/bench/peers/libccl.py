"""Puts oneCCL's libccl.so.2 into a virtual environment that has oneccl-cpu (collectives_vs_peers.sh).

  libccl.py VENV VERSION

oneccl-cpu's libccl.so.1 names libccl.so.2 as needed, but only the oneccl wheel carries it, under
its .data directory, which pip installs nowhere the loader looks: this takes it from the wheel
downloaded to VENV/wheels (oneccl-VERSION-*.whl) and writes VENV/lib/libccl.so.2, executable.
Runs on the venv's own python, with the standard library only.
"""
import glob
import os
import sys
import zipfile


def install(venv, version):
    wheel = glob.glob(f"{venv}/wheels/oneccl-{version}-*.whl")[0]
    with zipfile.ZipFile(wheel) as z:
        data = z.read(f"oneccl-{version}.data/data/lib/libccl.so.2")
    with open(f"{venv}/lib/libccl.so.2", "wb") as f:
        f.write(data)
    os.chmod(f"{venv}/lib/libccl.so.2", 0o755)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    install(*sys.argv[1:])
