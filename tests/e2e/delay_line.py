#!/usr/bin/env python3
"""delay_line.py - a link with delay and loss, in user space, for kernels
without tc netem (sch_netem): our CI machines' kernel has none.

    delay_line.py NETNS_A TAP_A NETNS_B TAP_B DELAY_MS LOSS_PCT [SEED]

Attaches to two persistent TAP devices (ip tuntap add ... mode tap), each in
its own network namespace, and copies every Ethernet frame from one to the
other DELAY_MS later, dropping LOSS_PCT percent of them at random in each
direction: what `tc qdisc add ... netem delay DELAY_MS loss LOSS_PCT%` on
both ends of a link does. TAP devices have no segmentation offload, so every
frame is at most the MTU. Runs until killed; prints one line when attached.
"""
import ctypes
import fcntl
import heapq
import os
import random
import select
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000


def open_tap(netns, name):
    """Opens TAP device name inside network namespace netns."""
    libc = ctypes.CDLL(None, use_errno=True)
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open("/var/run/netns/" + netns, os.O_RDONLY)
    try:
        if libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + netns)
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
        os.set_blocking(fd, False)
        return fd
    finally:
        libc.setns(here, CLONE_NEWNET)
        os.close(here)
        os.close(there)


def main():
    if len(sys.argv) < 7:
        sys.exit(__doc__)
    ns_a, tap_a, ns_b, tap_b = sys.argv[1:5]
    delay = float(sys.argv[5]) / 1000.0
    loss = float(sys.argv[6]) / 100.0
    rng = random.Random(int(sys.argv[7]) if len(sys.argv) > 7 else 1)
    a, b = open_tap(ns_a, tap_a), open_tap(ns_b, tap_b)
    other = {a: b, b: a}
    due = []  # (when, seq, fd to write, frame)
    seq = 0
    print("delay line attached: %s/%s <-> %s/%s, %g ms, %g%% loss"
          % (ns_a, tap_a, ns_b, tap_b, delay * 1000, loss * 100), flush=True)
    while True:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, fd, frame = heapq.heappop(due)
            try:
                os.write(fd, frame)
            except OSError:
                pass  # a full queue drops the frame, as a link would
        wait = max(0.0, due[0][0] - now) if due else 1.0
        ready, _, _ = select.select([a, b], [], [], wait)
        for fd in ready:
            while True:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if rng.random() >= loss:
                    seq += 1
                    heapq.heappush(due, (time.monotonic() + delay, seq, other[fd], frame))


if __name__ == "__main__":
    main()
