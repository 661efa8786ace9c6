"""Prints a libfabric's version as MAJOR.MINOR, from the library itself (collectives_vs_peers.sh).

  fi_version.py PATH/libfabric.so.1

For a libfabric without its fi_info next to it: fi_version() packs the major version in the high
16 bits and the minor in the low 16.
"""
import ctypes
import sys


def version_text(packed):
    return f"{packed >> 16}.{packed & 0xffff}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(version_text(ctypes.CDLL(sys.argv[1]).fi_version()))
