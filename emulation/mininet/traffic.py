"""UDP traffic for the packet-level fabric, run inside a host's network namespace
(standard library only, so any Python works).

  send    many flows (distinct UDP source ports) to one destination, for split checks
  stream  a steady, sequenced stream to several destinations, for loss checks
  recv    count what arrives, per source address, until SIGTERM/SIGINT or --duration

Each command prints one JSON object on stdout when it ends.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time

DEFAULT_PORT = 9000


def send_flows(dst: str, port: int, flows: int, packets: int, size: int, src_port_base: int,
               rate_pps: float) -> dict[str, int]:
    payload = b"x" * max(0, size - 16)
    gap = 1.0 / rate_pps if rate_pps > 0 else 0.0
    sent = 0
    next_at = time.monotonic()
    for f in range(flows):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("0.0.0.0", src_port_base + f))
            for i in range(packets):
                s.sendto(f"{f:8d}{i:8d}".encode() + payload, (dst, port))
                sent += 1
                next_at += gap
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
    return {"sent": sent, "flows": flows}


def stream(dsts: list[str], port: int, rate_pps: float, duration_s: float, size: int,
           src_ports: int, src_port_base: int, stop: threading.Event) -> dict[str, object]:
    """``rate_pps`` per destination; source ports rotate over ``src_ports`` sockets."""
    socks = []
    for i in range(src_ports):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", src_port_base + i))
        socks.append(s)
    payload = b"y" * max(0, size - 16)
    sent = dict.fromkeys(dsts, 0)
    gap = 1.0 / rate_pps
    start = next_at = time.monotonic()
    seq = 0
    while not stop.is_set() and time.monotonic() - start < duration_s:
        for dst in dsts:
            sock = socks[seq % len(socks)]
            sock.sendto(f"{seq:16d}".encode() + payload, (dst, port))
            sent[dst] += 1
        seq += 1
        next_at += gap
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    for s in socks:
        s.close()
    return {"sent": sent, "duration_s": time.monotonic() - start}


def receive(port: int, duration_s: float, stop: threading.Event) -> dict[str, object]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("0.0.0.0", port))
        s.settimeout(0.2)
        received: dict[str, int] = {}
        start = time.monotonic()
        while not stop.is_set() and time.monotonic() - start < duration_s:
            try:
                _, (src, _) = s.recvfrom(65536)
            except TimeoutError:
                continue
            received[src] = received.get(src, 0) + 1
        # What already arrived counts: a receiver told to stop while it was starved of CPU
        # still has datagrams in its socket buffer.
        while True:
            try:
                _, (src, _) = s.recvfrom(65536)
            except TimeoutError:
                break
            received[src] = received.get(src, 0) + 1
    return {"received": received}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("send")
    p.add_argument("--dst", required=True)
    p.add_argument("--flows", type=int, default=100)
    p.add_argument("--packets", type=int, default=10)
    p.add_argument("--rate", type=float, default=0.0, help="packets per second (0: flat out)")
    p.add_argument("--src-port-base", type=int, default=20000)
    p = sub.add_parser("stream")
    p.add_argument("--dst", required=True, action="append")
    p.add_argument("--rate", type=float, default=100.0, help="packets per second per destination")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--src-ports", type=int, default=16)
    p.add_argument("--src-port-base", type=int, default=30000)
    p = sub.add_parser("recv")
    p.add_argument("--duration", type=float, default=3600.0)
    for p in sub.choices.values():
        p.add_argument("--port", type=int, default=DEFAULT_PORT)
        p.add_argument("--size", type=int, default=200)
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.command == "send":
        result: dict[str, object] = dict(send_flows(args.dst, args.port, args.flows, args.packets,
                                                    args.size, args.src_port_base, args.rate))
    elif args.command == "stream":
        result = stream(args.dst, args.port, args.rate, args.duration, args.size, args.src_ports,
                        args.src_port_base, stop)
    else:
        print(json.dumps({"listening": args.port}), flush=True)
        result = receive(args.port, args.duration, stop)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
