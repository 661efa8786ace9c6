#!/usr/bin/env python3
"""Prints a TCP port on 127.0.0.1 that nothing listens on now (the local cluster's and the
end-to-end tests' processes bind the ports they are given).

The kernel picks it (bind to port 0); the socket closes on exit, so the port is free until
someone else takes it: callers start their listener right away.
"""
import socket
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    print(free_port())
